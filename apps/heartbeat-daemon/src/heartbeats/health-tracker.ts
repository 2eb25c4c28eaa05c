import type {
  HealthValues,
  HealthSeriesWrite,
  InterfaceLatestRecord,
  ResourceHour,
  ResourceSample,
  TrafficRecord,
} from "@fleet/db";
import {
  type Clock,
  pingLossPercent,
  type THealthInterface,
  type THealthPing,
  type THealthResources,
  usedPercent,
} from "@fleet/shared";

/** What one heartbeat reported of its health (docs/api.md "Health"). */
export interface HealthReport {
  resources?: THealthResources | null | undefined;
  interfaces?: THealthInterface[] | null | undefined;
  ping?: THealthPing | null | undefined;
}

/**
 * What a flush writes besides liveness: interface states, closed samples and hours. The latest
 * values go with the heartbeat's own liveness update (`observe` returns them to the writer).
 */
export interface HealthFlush extends HealthSeriesWrite {
  interfaces: InterfaceLatestRecord[];
  resourceSamples: ResourceSample[];
  resourceHours: ResourceHour[];
  trafficSamples: TrafficRecord[];
  trafficHours: TrafficRecord[];
}

const HOUR_MS = 3_600_000;
const MEASURES = 7;
/** Records waiting for a database that does not answer, at most (the oldest go first). */
const MAX_QUEUED_RECORDS = 200_000;

/**
 * The tracker's own values objects hold NaN, never null, for a measure not reported: a field that
 * only ever holds numbers keeps its double in place, while one that may hold null gets a new heap
 * number at every write, which lived as long as the router's next report and so outlived the young
 * generation: a third of what the daemon promoted a heartbeat (docs/scale.md). Its readers, the
 * liveness write and the sample packing, take a value that is not finite as null.
 */
const unknownValues = (): HealthValues => ({
  cpuLoad: Number.NaN,
  memoryUsedPercent: Number.NaN,
  diskUsedPercent: Number.NaN,
  temperature: Number.NaN,
  voltage: Number.NaN,
  pingLossPercent: Number.NaN,
  pingRttMs: Number.NaN,
});

/** Every measure unknown (what a closed period's values are reset to). */
const UNKNOWN = unknownValues();

/** A copy of the tracker's values with null for NaN (what a drain hands out). */
const withNulls = (v: HealthValues): HealthValues => ({
  cpuLoad: orNull(v.cpuLoad as number),
  memoryUsedPercent: orNull(v.memoryUsedPercent as number),
  diskUsedPercent: orNull(v.diskUsedPercent as number),
  temperature: orNull(v.temperature as number),
  voltage: orNull(v.voltage as number),
  pingLossPercent: orNull(v.pingLossPercent as number),
  pingRttMs: orNull(v.pingRttMs as number),
});

/**
 * The values of `report` written into `into` (every measure; NaN when not reported); false when
 * it reports neither resources nor a ping. `into` is the tracker's scratch: a heartbeat allocates
 * no values object of its own.
 */
const valuesInto = (report: HealthReport, into: HealthValues): boolean => {
  const r = report.resources;
  const p = report.ping;
  if (!r && !p) return false;
  into.cpuLoad = r?.cpu_load ?? Number.NaN;
  into.memoryUsedPercent = usedPercent(r?.memory_total, r?.memory_free) ?? Number.NaN;
  into.diskUsedPercent = usedPercent(r?.disk_total, r?.disk_free) ?? Number.NaN;
  into.temperature = r?.temperature ?? Number.NaN;
  into.voltage = r?.voltage ?? Number.NaN;
  into.pingLossPercent = pingLossPercent(p) ?? Number.NaN;
  into.pingRttMs = p?.rtt_avg_ms ?? Number.NaN;
  return true;
};

/** The measures in the order of the hourly accumulator (see `accumulate` in `observe`). */
const fromArray = (a: ArrayLike<number | null>): HealthValues => ({
  cpuLoad: a[0] ?? null,
  memoryUsedPercent: a[1] ?? null,
  diskUsedPercent: a[2] ?? null,
  temperature: a[3] ?? null,
  voltage: a[4] ?? null,
  pingLossPercent: a[5] ?? null,
  pingRttMs: a[6] ?? null,
});

/**
 * A router's numbers, one Float64Array (NaN: unknown): its hourly accumulator, then a block of
 * `NUMBERS` per interface, written in place. V8 boxes every double an object field holds, and every
 * typed array is an object, an ArrayBuffer and a block of memory of its own that each major GC walks
 * and sweeps: one array per router, not one per interface, is a tenth of them at 8 interfaces
 * (about 1.5 KB less heap a router). An
 * interface's block: the counters and time of the previous heartbeat (the rate's start), the rate of
 * the latest interval (NaN: first report or a reset), then two traffic accumulators, the period's
 * and the hour's: bytes and seconds of the intervals a rate is made of (reset intervals left out),
 * and errors counted.
 */
const RX_NOW = 0;
const TX_NOW = 1;
const RX_ERR_NOW = 2;
const TX_ERR_NOW = 3;
const AT_MS = 4;
const RX_RATE = 5;
const TX_RATE = 6;
/** Offsets of the two accumulators; within one: rx bytes, tx bytes, seconds, rx errors, tx errors. */
const PERIOD = 7;
const HOUR = 12;
const RX_BYTES = 0;
const TX_BYTES = 1;
const SECONDS = 2;
const RX_ERRORS = 3;
const TX_ERRORS = 4;
const NUMBERS = 17;
/** The hourly accumulator at the start of a router's array: per measure min, max, sum, count. */
const HOURLY_NUMBERS = MEASURES * 4;

const addBytes = (n: Float64Array, at: number, rx: number, tx: number, seconds: number): void => {
  n[at + RX_BYTES] = (n[at + RX_BYTES] as number) + rx;
  n[at + TX_BYTES] = (n[at + TX_BYTES] as number) + tx;
  n[at + SECONDS] = (n[at + SECONDS] as number) + seconds;
};
const addErrors = (n: Float64Array, at: number, rx: number | null, tx: number | null): void => {
  if (rx !== null) n[at + RX_ERRORS] = (n[at + RX_ERRORS] as number) + rx;
  if (tx !== null) n[at + TX_ERRORS] = (n[at + TX_ERRORS] as number) + tx;
};
/** Whether the accumulator at `at` holds anything (an interval with a rate, or errors). */
const holdsTraffic = (n: Float64Array, at: number): boolean =>
  (n[at + SECONDS] as number) > 0 || (n[at + RX_ERRORS] as number) > 0 || (n[at + TX_ERRORS] as number) > 0;

/** NaN (unknown, in a field that only ever holds numbers) as null. */
const orNull = (value: number): number | null => (Number.isNaN(value) ? null : value);

/** One interface of a router: its numbers are the block at `at` of the router's array. */
class InterfaceState {
  readonly name: string;
  readonly at: number;
  running: boolean | null = null;
  /** Reported within the current period (an interface gone from reports is no longer sampled). */
  seen = true;

  constructor(name: string, at: number) {
    this.name = name;
    this.at = at;
  }
}

interface RouterState {
  period: number;
  /** The last values reported in the period (NaN: not reported), written in place. */
  last: HealthValues;
  /** Whether the period has a report (a sample to write when it closes). */
  lastReported: boolean;
  hour: number;
  /**
   * The hourly accumulator (per measure: min, max, sum, count; NaN min/max: none yet), then the
   * interfaces' blocks (see `NUMBERS`); replaced by a larger copy when an interface finds no free block.
   */
  n: Float64Array;
  hourlyCount: number;
  interfaces: Map<string, InterfaceState>;
  /**
   * The interfaces in the order of the last report: a router reports the same ones in the same
   * order every time, so the entry at a report's index is found without a lookup by name.
   */
  order: InterfaceState[];
  /** The latest values reported (each measure's last report; NaN: never), written in place. */
  current: HealthValues;
  lastSeenMs: number;
}

/** Empties the hourly accumulator in place (it lives as long as its router). */
const resetHourly = (a: Float64Array): Float64Array => {
  a.fill(0, 0, HOURLY_NUMBERS);
  for (let i = 0; i < MEASURES; i++) {
    a[i * 4] = Number.NaN;
    a[i * 4 + 1] = Number.NaN;
  }
  return a;
};
/** A router's array with room for `interfaces` blocks. */
const newNumbers = (interfaces: number) => resetHourly(new Float64Array(HOURLY_NUMBERS + interfaces * NUMBERS));

/** A free block of `state`'s array for a new interface (a renamed one's, else a larger array's). */
const freeBlock = (state: RouterState): number => {
  const capacity = (state.n.length - HOURLY_NUMBERS) / NUMBERS;
  if (state.interfaces.size < capacity) {
    const used = new Uint8Array(capacity);
    for (const i of state.interfaces.values()) used[(i.at - HOURLY_NUMBERS) / NUMBERS] = 1;
    return HOURLY_NUMBERS + used.indexOf(0) * NUMBERS;
  }
  const grown = new Float64Array(HOURLY_NUMBERS + Math.max(4, capacity * 2) * NUMBERS);
  grown.set(state.n);
  state.n = grown;
  return HOURLY_NUMBERS + capacity * NUMBERS;
};

/** Adds one reported value (null: not reported) to the hourly accumulator's measure at `at`. */
const accumulate = (acc: Float64Array, at: number, v: number | null): void => {
  if (v === null || Number.isNaN(v)) return;
  if (!(v >= (acc[at] as number))) acc[at] = v;
  if (!(v <= (acc[at + 1] as number))) acc[at + 1] = v;
  acc[at + 2] = (acc[at + 2] as number) + v;
  acc[at + 3] = (acc[at + 3] as number) + 1;
};

/** A counter delta, or null when the counter went backwards (a reboot, a wrap) or is unknown (NaN before). */
const delta = (now: number | null | undefined, before: number): number | null =>
  now == null || !(now >= before) ? null : now - before;

/**
 * The daemon's health state (docs/api.md "Health", docs/scale.md "Health samples"): every heartbeat
 * with health passes through `observe` (memory only; it returns the latest values, which the writer
 * puts in the heartbeat's liveness update); each flush `drain`s the interface states due and the
 * periods that closed: one resource sample per router per
 * `sampleMs` (the last values reported in it), hourly min/avg/max (over every heartbeat of the
 * hour), and interface rates. A counter lower than before (a reboot, a wrap) gives no rate for
 * that interval, never a spike: rates are bytes over the seconds of the intervals that had none.
 */
export class HealthTracker {
  readonly #sampleMs: number;
  readonly #clock: Clock;
  readonly #routers = new Map<string, RouterState>();
  /** Routers with an open period, by its index: closed at the drain after the period ends. */
  readonly #open = new Map<number, Set<string>>();
  /**
   * Routers whose interface states the next flush writes (a running flag changed, or a period
   * closed): a set, so that neither `due` nor `drain` walks every router at every flush.
   */
  readonly #interfacesDue = new Set<string>();
  #out: HealthFlush = emptyFlush();
  #queued = 0;
  /** One heartbeat's values while `observe` runs (see `valuesInto`). */
  readonly #values: HealthValues = unknownValues();

  constructor(options: { sampleSeconds: number; clock: Clock }) {
    this.#sampleMs = options.sampleSeconds * 1000;
    this.#clock = options.clock;
  }

  /** Routers tracked (for tests and metrics). */
  get routers(): number {
    return this.#routers.size;
  }

  /**
   * Takes a heartbeat's health; returns the router's latest values (each measure's last report,
   * NaN for one never reported; the tracker's own object: copy it to keep it), or null when the heartbeat reported none or came
   * out of order.
   */
  observe(routerId: string, atMs: number, report: HealthReport): HealthValues | null {
    const values = valuesInto(report, this.#values) ? this.#values : null;
    const interfaces = report.interfaces;
    if (!values && !interfaces) return null;
    const period = Math.floor(atMs / this.#sampleMs);
    let state = this.#routers.get(routerId);
    if (!state) {
      state = {
        period,
        last: unknownValues(),
        lastReported: false,
        hour: Math.floor(atMs / HOUR_MS),
        n: newNumbers(interfaces?.length ?? 0),
        hourlyCount: 0,
        interfaces: new Map(),
        order: [],
        current: unknownValues(),
        lastSeenMs: atMs,
      };
      this.#routers.set(routerId, state);
      this.#openPeriod(period, routerId);
    } else {
      if (atMs < state.lastSeenMs) return null; // out of order (a retry): the series moves forward only
      if (period !== state.period) {
        this.#closePeriod(routerId, state);
        state.period = period;
        this.#openPeriod(period, routerId);
      }
    }
    const hour = Math.floor(atMs / HOUR_MS);
    if (hour !== state.hour) {
      this.#closeHour(routerId, state);
      state.hour = hour;
    }
    state.lastSeenMs = atMs;
    if (values) {
      mergeInto(state.last, values);
      state.lastReported = true;
      mergeInto(state.current, values);
      // One call per measure (in `fromArray`'s order), not a loop over key names: no keyed lookup per value.
      const acc = state.n;
      accumulate(acc, 0, values.cpuLoad);
      accumulate(acc, 4, values.memoryUsedPercent);
      accumulate(acc, 8, values.diskUsedPercent);
      accumulate(acc, 12, values.temperature);
      accumulate(acc, 16, values.voltage);
      accumulate(acc, 20, values.pingLossPercent);
      accumulate(acc, 24, values.pingRttMs);
      state.hourlyCount++;
    }
    if (interfaces) this.#observeInterfaces(routerId, state, atMs, interfaces);
    return values ? state.current : null;
  }

  #observeInterfaces(routerId: string, state: RouterState, atMs: number, interfaces: THealthInterface[]): void {
    const order = state.order;
    for (let k = 0; k < interfaces.length; k++) {
      const report = interfaces[k] as THealthInterface;
      const known = order[k];
      let i = known !== undefined && known.name === report.name ? known : state.interfaces.get(report.name);
      const created = i === undefined;
      if (i === undefined) {
        i = new InterfaceState(report.name, freeBlock(state));
        state.interfaces.set(report.name, i);
        state.n.fill(Number.NaN, i.at, i.at + PERIOD).fill(0, i.at + PERIOD, i.at + NUMBERS);
        this.#interfacesDue.add(routerId);
      }
      const n = state.n;
      const o = i.at;
      if (!created) {
        const seconds = (atMs - (n[o + AT_MS] as number)) / 1000;
        const rx = delta(report.rx_bytes, n[o + RX_NOW] as number);
        const tx = delta(report.tx_bytes, n[o + TX_NOW] as number);
        if (seconds > 0 && rx !== null && tx !== null) {
          addBytes(n, o + PERIOD, rx, tx, seconds);
          addBytes(n, o + HOUR, rx, tx, seconds);
          n[o + RX_RATE] = (rx * 8) / seconds;
          n[o + TX_RATE] = (tx * 8) / seconds;
        } else {
          n[o + RX_RATE] = Number.NaN;
          n[o + TX_RATE] = Number.NaN;
        }
        const rxErr = delta(report.rx_errors, n[o + RX_ERR_NOW] as number);
        const txErr = delta(report.tx_errors, n[o + TX_ERR_NOW] as number);
        addErrors(n, o + PERIOD, rxErr, txErr);
        addErrors(n, o + HOUR, rxErr, txErr);
      }
      order[k] = i;
      const running = report.running ?? null;
      if (running !== i.running) this.#interfacesDue.add(routerId);
      i.running = running;
      n[o + RX_NOW] = report.rx_bytes ?? Number.NaN;
      n[o + TX_NOW] = report.tx_bytes ?? Number.NaN;
      n[o + RX_ERR_NOW] = report.rx_errors ?? Number.NaN;
      n[o + TX_ERR_NOW] = report.tx_errors ?? Number.NaN;
      n[o + AT_MS] = atMs;
      i.seen = true;
    }
    order.length = interfaces.length;
    // At most 64 per heartbeat, but names change (an interface renamed): keep those of the last report only.
    if (state.interfaces.size > interfaces.length) {
      const names = new Set(interfaces.map((r) => r.name));
      for (const [name, i] of state.interfaces) if (!names.has(name) && !i.seen) state.interfaces.delete(name);
    }
  }

  #openPeriod(period: number, routerId: string): void {
    let set = this.#open.get(period);
    if (!set) {
      set = new Set();
      this.#open.set(period, set);
    }
    set.add(routerId);
  }

  #closePeriod(routerId: string, state: RouterState): void {
    this.#open.get(state.period)?.delete(routerId);
    const atMs = state.period * this.#sampleMs;
    if (state.lastReported) {
      this.#out.resourceSamples.push({ routerId, atMs, values: withNulls(state.last) });
      this.#queued++;
    }
    mergeInto(state.last, UNKNOWN, true);
    state.lastReported = false;
    const n = state.n;
    for (const [name, i] of state.interfaces) {
      if (!i.seen) continue;
      this.#out.trafficSamples.push(trafficRecord(routerId, name, atMs, n, i.at + PERIOD));
      this.#queued++;
      n.fill(0, i.at + PERIOD, i.at + PERIOD + 5);
      i.seen = false;
    }
    if (state.interfaces.size > 0) this.#interfacesDue.add(routerId);
    this.#trim();
  }

  #closeHour(routerId: string, state: RouterState): void {
    const atMs = state.hour * HOUR_MS;
    if (state.hourlyCount > 0) {
      const acc = state.n;
      const min: Array<number | null> = [];
      const avg: Array<number | null> = [];
      const max: Array<number | null> = [];
      for (let i = 0; i < MEASURES; i++) {
        const count = acc[i * 4 + 3] as number;
        min.push(count > 0 ? (acc[i * 4] as number) : null);
        max.push(count > 0 ? (acc[i * 4 + 1] as number) : null);
        avg.push(count > 0 ? (acc[i * 4 + 2] as number) / count : null);
      }
      this.#out.resourceHours.push({ routerId, atMs, min: fromArray(min), avg: fromArray(avg), max: fromArray(max) });
      this.#queued++;
      resetHourly(state.n);
      state.hourlyCount = 0;
    }
    const n = state.n;
    for (const [name, i] of state.interfaces) {
      if (!holdsTraffic(n, i.at + HOUR)) continue;
      this.#out.trafficHours.push(trafficRecord(routerId, name, atMs, n, i.at + HOUR));
      this.#queued++;
      n.fill(0, i.at + HOUR, i.at + HOUR + 5);
    }
  }

  /** Drops the oldest queued records while the database does not take them (bounded memory). */
  #trim(): void {
    if (this.#queued <= MAX_QUEUED_RECORDS) return;
    const excess = this.#queued - MAX_QUEUED_RECORDS;
    this.#out.resourceSamples.splice(0, Math.min(excess, this.#out.resourceSamples.length));
    this.#out.trafficSamples.splice(0, Math.min(excess, this.#out.trafficSamples.length));
    this.#queued =
      this.#out.resourceSamples.length +
      this.#out.trafficSamples.length +
      this.#out.resourceHours.length +
      this.#out.trafficHours.length;
  }

  /**
   * What the next flush writes: the interface states due, and every period
   * and hour that ended by now (the clock), including those of routers that went silent.
   */
  drain(): HealthFlush {
    const nowMs = this.#clock.nowMs();
    const current = Math.floor(nowMs / this.#sampleMs);
    const hour = Math.floor(nowMs / HOUR_MS);
    for (const [period, routers] of this.#open) {
      if (period >= current) continue;
      this.#open.delete(period);
      for (const routerId of routers) {
        const state = this.#routers.get(routerId);
        if (!state || state.period !== period) continue;
        // Silent since the period ended: its sample (and hour) close without waiting for its next report.
        this.#closePeriod(routerId, state);
        if (hour !== state.hour) {
          this.#closeHour(routerId, state);
          state.hour = hour;
        }
        const pendingHour =
          state.hourlyCount > 0 ||
          [...state.interfaces.values()].some(
            (i) => (state.n[i.at + HOUR + SECONDS] as number) > 0 || (state.n[i.at + HOUR + RX_ERRORS] as number) > 0,
          );
        // Nothing left to close: forgotten (its counters are stale; its next report starts afresh).
        if (!pendingHour && !this.#interfacesDue.has(routerId)) this.#routers.delete(routerId);
        else {
          state.period = current;
          this.#openPeriod(current, routerId);
        }
      }
    }
    const out = this.#out;
    for (const routerId of this.#interfacesDue) {
      const state = this.#routers.get(routerId);
      if (state) {
        const n = state.n;
        for (const [name, { at: o, running }] of state.interfaces)
          out.interfaces.push({
            routerId,
            name,
            reportedAt: new Date(n[o + AT_MS] as number),
            running,
            rxBytes: orNull(n[o + RX_NOW] as number),
            txBytes: orNull(n[o + TX_NOW] as number),
            rxErrors: orNull(n[o + RX_ERR_NOW] as number),
            txErrors: orNull(n[o + TX_ERR_NOW] as number),
            rxBps: orNull(n[o + RX_RATE] as number),
            txBps: orNull(n[o + TX_RATE] as number),
          });
      }
    }
    this.#interfacesDue.clear();
    this.#out = emptyFlush();
    this.#queued = 0;
    return out;
  }

  /** Puts back the records of a flush the database did not take (interface states: those held now). */
  requeue(flush: HealthFlush): void {
    const out = this.#out;
    out.resourceSamples.unshift(...flush.resourceSamples);
    out.resourceHours.unshift(...flush.resourceHours);
    out.trafficSamples.unshift(...flush.trafficSamples);
    out.trafficHours.unshift(...flush.trafficHours);
    for (const i of flush.interfaces) if (this.#routers.has(i.routerId)) this.#interfacesDue.add(i.routerId);
    this.#queued =
      out.resourceSamples.length + out.resourceHours.length + out.trafficSamples.length + out.trafficHours.length;
    this.#trim();
  }

  /** Whether a drain would write anything now. */
  get due(): boolean {
    if (this.#queued > 0 || this.#interfacesDue.size > 0) return true;
    const current = Math.floor(this.#clock.nowMs() / this.#sampleMs);
    for (const period of this.#open.keys()) if (period < current) return true;
    return false;
  }

  /** Closes every open period and hour now (a graceful shutdown): the last values so far are kept. */
  closeAll(): void {
    for (const [routerId, state] of this.#routers) {
      this.#closePeriod(routerId, state);
      this.#closeHour(routerId, state);
    }
    this.#open.clear();
  }
}

const emptyFlush = (): HealthFlush => ({
  interfaces: [],
  resourceSamples: [],
  resourceHours: [],
  trafficSamples: [],
  trafficHours: [],
});

/**
 * Measures a heartbeat did not report (NaN) keep the values reported earlier; writes into `older`
 * (held by the tracker only: a heartbeat allocates nothing here). `all`: every measure, NaN too.
 */
const mergeInto = (older: HealthValues, newer: HealthValues, all = false): void => {
  // Each measure by name (not a loop over key names): property access the compiler keeps monomorphic.
  let v = newer.cpuLoad as number;
  if (all || !Number.isNaN(v)) older.cpuLoad = v;
  v = newer.memoryUsedPercent as number;
  if (all || !Number.isNaN(v)) older.memoryUsedPercent = v;
  v = newer.diskUsedPercent as number;
  if (all || !Number.isNaN(v)) older.diskUsedPercent = v;
  v = newer.temperature as number;
  if (all || !Number.isNaN(v)) older.temperature = v;
  v = newer.voltage as number;
  if (all || !Number.isNaN(v)) older.voltage = v;
  v = newer.pingLossPercent as number;
  if (all || !Number.isNaN(v)) older.pingLossPercent = v;
  v = newer.pingRttMs as number;
  if (all || !Number.isNaN(v)) older.pingRttMs = v;
};
const trafficRecord = (routerId: string, name: string, atMs: number, n: Float64Array, at: number): TrafficRecord => {
  const seconds = n[at + SECONDS] as number;
  return {
    routerId,
    name,
    atMs,
    rxBps: seconds > 0 ? ((n[at + RX_BYTES] as number) * 8) / seconds : null,
    txBps: seconds > 0 ? ((n[at + TX_BYTES] as number) * 8) / seconds : null,
    rxErrors: n[at + RX_ERRORS] as number,
    txErrors: n[at + TX_ERRORS] as number,
  };
};
