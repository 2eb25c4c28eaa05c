import { deflateRawSync, inflateRawSync } from "node:zlib";
import type { HealthValues } from "./router-health.repository.ts";

/**
 * The records packed into the health series' `data` (migrations 131 and 160, docs/scale.md "Health
 * samples"): fixed-size, little-endian; staged, then compacted per day (5-minute tier) or
 * appended (hourly tier). Values are quantized to what a
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

/** The quarter of the UTC day a 5-minute record's row holds (hourly records: one row a day, part 0). */
export const PART_MS = 21_600_000;
export const partOf = (ms: number): number => Math.floor((ms - dayOf(ms) * DAY_MS) / PART_MS);

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

// ---- Staged and compacted 5-minute samples (migration 160, docs/scale.md "Health samples") ----

/** Bytes of one interface's traffic record without its time: rx and tx bps (float32), rx and tx errors (uint16). */
const TRAFFIC_VALUES_BYTES = TRAFFIC_RECORD_BYTES - 3;

/** `part` of a compacted day's row in the 5-minute tables (0-3: quarter days appended before migration 160). */
export const COMPACT_PART = 4;

/** One sample period of one router as staged: its resources and its interfaces' traffic. */
export interface StagedSample {
  routerId: string;
  atMs: number;
  values: HealthValues | null;
  traffic: ReadonlyArray<{ name: string; record: TrafficRecord }>;
}

/**
 * A staged row's `data`: a flag byte (1: resources follow), the 8 value bytes, then per interface a
 * 16-bit name length, the name (UTF-8) and its 12 traffic bytes. One row per router per period,
 * inserted once, never rewritten: the cheapest write PostgreSQL has.
 */
export const packStaged = (values: HealthValues | null, traffic: StagedSample["traffic"]): Buffer => {
  const names = traffic.map((t) => Buffer.from(t.name, "utf8"));
  let size = 1 + (values ? VALUES_BYTES : 0);
  for (const name of names) size += 2 + name.length + TRAFFIC_VALUES_BYTES;
  const out = Buffer.allocUnsafe(size);
  out[0] = values ? 1 : 0;
  let at = 1;
  if (values) {
    writeValues(out, at, values);
    at += VALUES_BYTES;
  }
  traffic.forEach((t, i) => {
    const name = names[i] as Buffer;
    out.writeUInt16LE(name.length, at);
    name.copy(out, at + 2);
    at += 2 + name.length;
    const record = packTraffic(t.record);
    record.copy(out, at, 3);
    at += TRAFFIC_VALUES_BYTES;
  });
  return out;
};

const readTraffic = (routerId: string, name: string, atMs: number, data: Buffer, at: number): TrafficRecord => {
  const rx = data.readFloatLE(at);
  const tx = data.readFloatLE(at + 4);
  const rxErrors = data.readUInt16LE(at + 8);
  const txErrors = data.readUInt16LE(at + 10);
  return {
    routerId,
    name,
    atMs,
    rxBps: Number.isNaN(rx) ? null : rx,
    txBps: Number.isNaN(tx) ? null : tx,
    rxErrors: rxErrors === NULL16 ? null : rxErrors,
    txErrors: txErrors === NULL16 ? null : txErrors,
  };
};

/** A staged row back: its resource sample (if any) and its interfaces' records. */
export const unpackStaged = (
  routerId: string,
  atMs: number,
  data: Buffer,
): { sample: ResourceSample | null; traffic: TrafficRecord[] } => {
  let at = 1;
  let sample: ResourceSample | null = null;
  if (data[0] === 1) {
    sample = { routerId, atMs, values: readValues(data, at) };
    at += VALUES_BYTES;
  }
  const traffic: TrafficRecord[] = [];
  while (at + 2 <= data.length) {
    const length = data.readUInt16LE(at);
    const name = data.toString("utf8", at + 2, at + 2 + length);
    at += 2 + length;
    if (at + TRAFFIC_VALUES_BYTES > data.length) break;
    traffic.push(readTraffic(routerId, name, atMs, data, at));
    at += TRAFFIC_VALUES_BYTES;
  }
  return { sample, traffic };
};

const writeVarint = (out: number[], value: number): void => {
  let v = value;
  while (v >= 0x80) {
    out.push((v & 0x7f) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
};

/**
 * A day of fixed-size records as one compact value: the seconds of the day as varint deltas (a
 * steady 300 s step deflates to almost nothing, whatever RESOURCE_SAMPLE_SECONDS is), then each
 * byte position of the records as a column of deltas (slowly varying measures become runs of
 * zeros), all through raw deflate. The values are quantized as before; this loses nothing more.
 */
const encodeColumns = (seconds: readonly number[], records: readonly Buffer[], size: number): Buffer => {
  const head: number[] = [];
  writeVarint(head, seconds.length);
  let previous = 0;
  for (const second of seconds) {
    writeVarint(head, second - previous);
    previous = second;
  }
  const n = records.length;
  const body = Buffer.allocUnsafe(head.length + n * size);
  Buffer.from(head).copy(body);
  let at = head.length;
  for (let j = 0; j < size; j++) {
    let before = 0;
    for (let i = 0; i < n; i++) {
      const byte = (records[i] as Buffer)[j] ?? 0;
      body[at++] = (byte - before) & 0xff;
      before = byte;
    }
  }
  return Buffer.concat([Buffer.from([1]), deflateRawSync(body, { level: 9 })]);
};

const decodeColumns = (data: Buffer, size: number): Array<{ second: number; record: Buffer }> => {
  if (data[0] !== 1) throw new RangeError("unknown compacted health encoding");
  const body = inflateRawSync(data.subarray(1));
  let at = 0;
  const readVarint = (): number => {
    let value = 0;
    let scale = 1;
    for (;;) {
      const byte = body[at++] ?? 0;
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) return value;
      scale *= 128;
    }
  };
  const n = readVarint();
  const seconds: number[] = [];
  let second = 0;
  for (let i = 0; i < n; i++) {
    second += readVarint();
    seconds.push(second);
  }
  const records = seconds.map((s) => ({ second: s, record: Buffer.alloc(size) }));
  for (let j = 0; j < size; j++) {
    let value = 0;
    for (let i = 0; i < n; i++) {
      value = (value + (body[at++] ?? 0)) & 0xff;
      (records[i] as { record: Buffer }).record[j] = value;
    }
  }
  return records;
};

/** A compacted day of resource samples (the `COMPACT_PART` row), from samples of that day in time order. */
export const compactResourceSamples = (samples: readonly ResourceSample[]): Buffer =>
  encodeColumns(
    samples.map((s) => secondOfDay(s.atMs)),
    samples.map((s) => {
      const out = Buffer.allocUnsafe(VALUES_BYTES);
      writeValues(out, 0, s.values);
      return out;
    }),
    VALUES_BYTES,
  );

export const expandResourceSamples = (routerId: string, day: number, data: Buffer): ResourceSample[] =>
  decodeColumns(data, VALUES_BYTES).map(({ second, record }) => ({
    routerId,
    atMs: day * DAY_MS + second * 1000,
    values: readValues(record, 0),
  }));

/** A compacted day of one interface's traffic, from its records of that day in time order. */
export const compactTraffic = (records: readonly TrafficRecord[]): Buffer =>
  encodeColumns(
    records.map((r) => secondOfDay(r.atMs)),
    records.map((r) => packTraffic(r).subarray(3)),
    TRAFFIC_VALUES_BYTES,
  );

export const expandTraffic = (routerId: string, name: string, day: number, data: Buffer): TrafficRecord[] =>
  decodeColumns(data, TRAFFIC_VALUES_BYTES).map(({ second, record }) =>
    readTraffic(routerId, name, day * DAY_MS + second * 1000, record, 0),
  );
