import type { HealthValues } from "./router-health.repository.ts";

/**
 * The records packed into the health series' `data` (migration 131, docs/scale.md "Health
 * samples"): fixed-size, little-endian, appended as periods close. Values are quantized to what a
 * chart shows: cpu and ping loss to 1 %, memory and disk to 0.5 %, temperature to 1 C
 * (-100..154), voltage to 0.25 V (0..63.5), round-trip time to 0.1 ms (up to 6553.4 ms).
 * Out-of-range values are clamped; the maximum of each byte is "not reported".
 */
export const DAY_MS = 86_400_000;
export const dayOf = (ms: number): number => Math.floor(ms / DAY_MS);

/** Resource values of one record: 6 bytes then a 16-bit round-trip time. */
const VALUES_BYTES = 8;
export const RESOURCE_SAMPLE_BYTES = 3 + VALUES_BYTES;
export const RESOURCE_HOUR_BYTES = 1 + 3 * VALUES_BYTES;
export const TRAFFIC_RECORD_BYTES = 3 + 4 + 4 + 2 + 2;

const NULL8 = 255;
const NULL16 = 65_535;

const q8 = (value: number | null, scale: number, offset = 0): number =>
  value === null || !Number.isFinite(value) ? NULL8 : Math.min(254, Math.max(0, Math.round((value + offset) * scale)));
const d8 = (byte: number, scale: number, offset = 0): number | null => (byte === NULL8 ? null : byte / scale - offset);

const writeValues = (out: Buffer, at: number, v: HealthValues): void => {
  out[at] = q8(v.cpuLoad, 1);
  out[at + 1] = q8(v.memoryUsedPercent, 2);
  out[at + 2] = q8(v.diskUsedPercent, 2);
  out[at + 3] = q8(v.temperature, 1, 100);
  out[at + 4] = q8(v.voltage, 4);
  out[at + 5] = q8(v.pingLossPercent, 1);
  const rtt = v.pingRttMs;
  out.writeUInt16LE(
    rtt === null || !Number.isFinite(rtt) ? NULL16 : Math.min(NULL16 - 1, Math.max(0, Math.round(rtt * 10))),
    at + 6,
  );
};

const readValues = (data: Buffer, at: number): HealthValues => {
  const rtt = data.readUInt16LE(at + 6);
  return {
    cpuLoad: d8(data[at] ?? NULL8, 1),
    memoryUsedPercent: d8(data[at + 1] ?? NULL8, 2),
    diskUsedPercent: d8(data[at + 2] ?? NULL8, 2),
    temperature: d8(data[at + 3] ?? NULL8, 1, 100),
    voltage: d8(data[at + 4] ?? NULL8, 4),
    pingLossPercent: d8(data[at + 5] ?? NULL8, 1),
    pingRttMs: rtt === NULL16 ? null : rtt / 10,
  };
};

/** Seconds into the UTC day of `ms` (3 bytes). */
const secondOfDay = (ms: number): number => Math.floor((ms - dayOf(ms) * DAY_MS) / 1000);

export interface ResourceSample {
  routerId: string;
  /** Start of the sample period. */
  atMs: number;
  values: HealthValues;
}
export interface ResourceHour {
  routerId: string;
  /** Start of the UTC hour. */
  atMs: number;
  min: HealthValues;
  avg: HealthValues;
  max: HealthValues;
}
export interface TrafficRecord {
  routerId: string;
  name: string;
  atMs: number;
  /** Bits per second (null: no rate for the interval, e.g. a counter reset). */
  rxBps: number | null;
  txBps: number | null;
  /** Errors counted in the interval (null: unknown). */
  rxErrors: number | null;
  txErrors: number | null;
}

export const packResourceSample = (sample: ResourceSample): Buffer => {
  const out = Buffer.allocUnsafe(RESOURCE_SAMPLE_BYTES);
  out.writeUIntLE(secondOfDay(sample.atMs), 0, 3);
  writeValues(out, 3, sample.values);
  return out;
};

export const packResourceHour = (hour: ResourceHour): Buffer => {
  const out = Buffer.allocUnsafe(RESOURCE_HOUR_BYTES);
  out[0] = Math.floor(secondOfDay(hour.atMs) / 3600);
  writeValues(out, 1, hour.min);
  writeValues(out, 1 + VALUES_BYTES, hour.avg);
  writeValues(out, 1 + 2 * VALUES_BYTES, hour.max);
  return out;
};

const u16 = (value: number | null): number =>
  value === null || !Number.isFinite(value) ? NULL16 : Math.min(NULL16 - 1, Math.max(0, Math.round(value)));

export const packTraffic = (record: TrafficRecord): Buffer => {
  const out = Buffer.allocUnsafe(TRAFFIC_RECORD_BYTES);
  out.writeUIntLE(secondOfDay(record.atMs), 0, 3);
  out.writeFloatLE(record.rxBps ?? Number.NaN, 3);
  out.writeFloatLE(record.txBps ?? Number.NaN, 7);
  out.writeUInt16LE(u16(record.rxErrors), 11);
  out.writeUInt16LE(u16(record.txErrors), 13);
  return out;
};

/** Records of one day's `data`, by time; a period written twice (two daemons, a retry) keeps the later record. */
const unpack = <T extends { atMs: number }>(data: Buffer, size: number, read: (at: number) => T): T[] => {
  const byTime = new Map<number, T>();
  for (let at = 0; at + size <= data.length; at += size) {
    const record = read(at);
    byTime.set(record.atMs, record);
  }
  return [...byTime.values()].sort((a, b) => a.atMs - b.atMs);
};

export const unpackResourceSamples = (routerId: string, day: number, data: Buffer): ResourceSample[] =>
  unpack(data, RESOURCE_SAMPLE_BYTES, (at) => ({
    routerId,
    atMs: day * DAY_MS + data.readUIntLE(at, 3) * 1000,
    values: readValues(data, at + 3),
  }));

export const unpackResourceHours = (routerId: string, day: number, data: Buffer): ResourceHour[] =>
  unpack(data, RESOURCE_HOUR_BYTES, (at) => ({
    routerId,
    atMs: day * DAY_MS + (data[at] ?? 0) * 3_600_000,
    min: readValues(data, at + 1),
    avg: readValues(data, at + 1 + VALUES_BYTES),
    max: readValues(data, at + 1 + 2 * VALUES_BYTES),
  }));

export const unpackTraffic = (routerId: string, name: string, day: number, data: Buffer): TrafficRecord[] =>
  unpack(data, TRAFFIC_RECORD_BYTES, (at) => {
    const rx = data.readFloatLE(at + 3);
    const tx = data.readFloatLE(at + 7);
    const rxErrors = data.readUInt16LE(at + 11);
    const txErrors = data.readUInt16LE(at + 13);
    return {
      routerId,
      name,
      atMs: day * DAY_MS + data.readUIntLE(at, 3) * 1000,
      rxBps: Number.isNaN(rx) ? null : rx,
      txBps: Number.isNaN(tx) ? null : tx,
      rxErrors: rxErrors === NULL16 ? null : rxErrors,
      txErrors: txErrors === NULL16 ? null : txErrors,
    };
  });
