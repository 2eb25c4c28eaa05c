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
 * The values of `report` written into `into` (every measure; null when not reported); false when
 * it reports neither resources nor a ping. `into` is the tracker's scratch: a heartbeat allocates
 * no values object of its own.
 */
const valuesInto = (report: HealthReport, into: HealthValues): boolean => {
  const r = report.resources;
  const p = report.ping;
  if (!r && !p) return false;
  into.cpuLoad = r?.cpu_load ?? null;
  into.memoryUsedPercent = usedPercent(r?.memory_total, r?.memory_free);
  into.diskUsedPercent = usedPercent(r?.disk_total, r?.disk_free);
  into.temperature = r?.temperature ?? null;
  into.voltage = r?.voltage ?? null;
  into.pingLossPercent = pingLossPercent(p);
  into.pingRttMs = p?.rtt_avg_ms ?? null;
  return true;
};

/** The measures in the order of the hourly accumulator (and `fromArray`). */
const KEYS = [
  "cpuLoad",
  "memoryUsedPercent",
  "diskUsedPercent",
  "temperature",
  "voltage",
  "pingLossPercent",
  "pingRttMs",
] as const satisfies ReadonlyArray<keyof HealthValues>;
const fromArray = (a: ArrayLike<number | null>): HealthValues => ({
  cpuLoad: a[0] ?? null,
  memoryUsedPercent: a[1] ?? null,
  diskUsedPercent: a[2] ?? null,
  temperature: a[3] ?? null,
  voltage: a[4] ?? null,
  pingLossPercent: a[5] ?? null,
  pingRttMs: a[6] ?? null,
});

/** Bytes and seconds of the intervals a rate is made of (reset intervals left out), and errors counted. */
interface Traffic {
  rxBytes: number;
  txBytes: number;
  seconds: number;
  rxErrors: number;
  txErrors: number;
}
const emptyTraffic = (): Traffic => ({ rxBytes: 0, txBytes: 0, seconds: 0, rxErrors: 0, txErrors: 0 });
const addBytes = (t: Traffic, rx: number, tx: number, seconds: number): void => {
  t.rxBytes += rx;
  t.txBytes += tx;
  t.seconds += seconds;
};
const addErrors = (t: Traffic, rx: number | null, tx: number | null): void => {
  if (rx !== null) t.rxErrors += rx;
  if (tx !== null) t.txErrors += tx;
};

/** NaN (unknown, in a field that only ever holds numbers) as null. */
const orNull = (value: number): number | null => (Number.isNaN(value) ? null : value);

/**
 * One interface of a router. Its numbers live in fields that only ever hold numbers (NaN: unknown),
 * which V8 keeps as doubles written in place: a heartbeat's values are copied in, rather than its
 * boxed numbers being kept alive (and promoted to the old generation) by a long-lived interface.
 * The getters give the nullable values the drain writes.
 */
class InterfaceState {
  readonly name: string;
  /** The previous heartbeat's counters and time (the rate's start). */
  rxNow = Number.NaN;
  txNow = Number.NaN;
  rxErrNow = Number.NaN;
  txErrNow = Number.NaN;
  atMs: number;
  running: boolean | null = null;
  /** The rate of the latest interval (NaN: first report or a reset). */
  rxRate = Number.NaN;
  txRate = Number.NaN;
  period: Traffic = emptyTraffic();
  hour: Traffic = emptyTraffic();
  /** Reported within the current period (an interface gone from reports is no longer sampled). */
  seen = true;

  constructor(name: string, atMs: number) {
    this.name = name;
    this.atMs = atMs;
  }

  get rx(): number | null {
    return orNull(this.rxNow);
  }
  get tx(): number | null {
    return orNull(this.txNow);
  }
  get rxErr(): number | null {
    return orNull(this.rxErrNow);
  }
  get txErr(): number | null {
    return orNull(this.txErrNow);
  }
  get rxBps(): number | null {
    return orNull(this.rxRate);
  }
  get txBps(): number | null {
    return orNull(this.txRate);
  }
}

interface RouterState {
  period: number;
  /** The last values reported in the period (null: none). */
  last: HealthValues | null;
  hour: number;
  /** Per measure: min, max, sum, count (NaN min/max: none yet). */
  hourly: Float64Array;
  hourlyCount: number;
  interfaces: Map<string, InterfaceState>;
  /**
   * The interfaces in the order of the last report: a router reports the same ones in the same
   * order every time, so the entry at a report's index is found without a lookup by name.
   */
  order: InterfaceState[];
  /** The latest values reported (each measure's last report). */
  current: HealthValues | null;
  /** Interfaces whose latest state is written at the next flush (their running flag changed, or a period closed). */
  interfacesDue: boolean;
  lastSeenMs: number;
}

const newHourly = () => {
  const a = new Float64Array(MEASURES * 4);
  for (let i = 0; i < MEASURES; i++) {
    a[i * 4] = Number.NaN;
    a[i * 4 + 1] = Number.NaN;
  }
  return a;
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
  #out: HealthFlush = emptyFlush();
  #queued = 0;
  /** One heartbeat's values while `observe` runs (see `valuesInto`). */
  readonly #values: HealthValues = {
    cpuLoad: null,
    memoryUsedPercent: null,
    diskUsedPercent: null,
    temperature: null,
    voltage: null,
    pingLossPercent: null,
    pingRttMs: null,
  };

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
   * the tracker's own object: copy it to keep it), or null when the heartbeat reported none or came
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
        last: null,
        hour: Math.floor(atMs / HOUR_MS),
        hourly: newHourly(),
        hourlyCount: 0,
        interfaces: new Map(),
        order: [],
        current: null,
        interfacesDue: false,
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
      if (state.last) mergeInto(state.last, values);
      else state.last = { ...values };
      if (state.current) mergeInto(state.current, values);
      else state.current = { ...values };
      const acc = state.hourly;
      for (let i = 0; i < MEASURES; i++) {
        const v = values[KEYS[i] as keyof HealthValues];
        if (v === null || v === undefined) continue;
        const at = i * 4;
        const min = acc[at] as number;
        const max = acc[at + 1] as number;
        if (!(v >= min)) acc[at] = v;
        if (!(v <= max)) acc[at + 1] = v;
        acc[at + 2] = (acc[at + 2] as number) + v;
        acc[at + 3] = (acc[at + 3] as number) + 1;
      }
      state.hourlyCount++;
    }
    if (interfaces) this.#observeInterfaces(state, atMs, interfaces);
    return values ? state.current : null;
  }

  #observeInterfaces(state: RouterState, atMs: number, interfaces: THealthInterface[]): void {
    const order = state.order;
    for (let k = 0; k < interfaces.length; k++) {
      const report = interfaces[k] as THealthInterface;
      const known = order[k];
      let i = known !== undefined && known.name === report.name ? known : state.interfaces.get(report.name);
      if (!i) {
        i = new InterfaceState(report.name, atMs);
        state.interfaces.set(report.name, i);
        state.interfacesDue = true;
      } else {
        const seconds = (atMs - i.atMs) / 1000;
        const rx = delta(report.rx_bytes, i.rxNow);
        const tx = delta(report.tx_bytes, i.txNow);
        if (seconds > 0 && rx !== null && tx !== null) {
          addBytes(i.period, rx, tx, seconds);
          addBytes(i.hour, rx, tx, seconds);
          i.rxRate = (rx * 8) / seconds;
          i.txRate = (tx * 8) / seconds;
        } else {
          i.rxRate = Number.NaN;
          i.txRate = Number.NaN;
        }
        const rxErr = delta(report.rx_errors, i.rxErrNow);
        const txErr = delta(report.tx_errors, i.txErrNow);
        addErrors(i.period, rxErr, txErr);
        addErrors(i.hour, rxErr, txErr);
      }
      order[k] = i;
      const running = report.running ?? null;
      if (running !== i.running) state.interfacesDue = true;
      i.running = running;
      i.rxNow = report.rx_bytes ?? Number.NaN;
      i.txNow = report.tx_bytes ?? Number.NaN;
      i.rxErrNow = report.rx_errors ?? Number.NaN;
      i.txErrNow = report.tx_errors ?? Number.NaN;
      i.atMs = atMs;
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
    if (state.last) {
      this.#out.resourceSamples.push({ routerId, atMs, values: state.last });
      this.#queued++;
    }
    state.last = null;
    for (const [name, i] of state.interfaces) {
      if (!i.seen) continue;
      this.#out.trafficSamples.push(trafficRecord(routerId, name, atMs, i.period));
      this.#queued++;
      i.period = emptyTraffic();
      i.seen = false;
    }
    if (state.interfaces.size > 0) state.interfacesDue = true;
    this.#trim();
  }

  #closeHour(routerId: string, state: RouterState): void {
    const atMs = state.hour * HOUR_MS;
    if (state.hourlyCount > 0) {
      const acc = state.hourly;
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
      state.hourly = newHourly();
      state.hourlyCount = 0;
    }
    for (const [name, i] of state.interfaces) {
      if (i.hour.seconds === 0 && i.hour.rxErrors === 0 && i.hour.txErrors === 0) continue;
      this.#out.trafficHours.push(trafficRecord(routerId, name, atMs, i.hour));
      this.#queued++;
      i.hour = emptyTraffic();
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
          [...state.interfaces.values()].some((i) => i.hour.seconds > 0 || i.hour.rxErrors > 0);
        // Nothing left to close: forgotten (its counters are stale; its next report starts afresh).
        if (!pendingHour && !state.interfacesDue) this.#routers.delete(routerId);
        else {
          state.period = current;
          this.#openPeriod(current, routerId);
        }
      }
    }
    const out = this.#out;
    for (const [routerId, state] of this.#routers) {
      if (state.interfacesDue) {
        state.interfacesDue = false;
        for (const [name, i] of state.interfaces)
          out.interfaces.push({
            routerId,
            name,
            reportedAt: new Date(i.atMs),
            running: i.running,
            rxBytes: i.rx,
            txBytes: i.tx,
            rxErrors: i.rxErr,
            txErrors: i.txErr,
            rxBps: i.rxBps,
            txBps: i.txBps,
          });
      }
    }
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
    for (const i of flush.interfaces) {
      const state = this.#routers.get(i.routerId);
      if (state) state.interfacesDue = true;
    }
    this.#queued =
      out.resourceSamples.length + out.resourceHours.length + out.trafficSamples.length + out.trafficHours.length;
    this.#trim();
  }

  /** Whether a drain would write anything now. */
  get due(): boolean {
    if (this.#queued > 0) return true;
    const current = Math.floor(this.#clock.nowMs() / this.#sampleMs);
    for (const period of this.#open.keys()) if (period < current) return true;
    for (const state of this.#routers.values()) if (state.interfacesDue) return true;
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
 * Measures a heartbeat did not report keep the values reported earlier; writes into `older` (held
 * by the tracker only: a heartbeat allocates nothing here).
 */
const mergeInto = (older: HealthValues, newer: HealthValues): void => {
  for (const key of KEYS) {
    const value = newer[key];
    if (value !== null) older[key] = value;
  }
};

const trafficRecord = (routerId: string, name: string, atMs: number, t: Traffic): TrafficRecord => ({
  routerId,
  name,
  atMs,
  rxBps: t.seconds > 0 ? (t.rxBytes * 8) / t.seconds : null,
  txBps: t.seconds > 0 ? (t.txBytes * 8) / t.seconds : null,
  rxErrors: t.rxErrors,
  txErrors: t.txErrors,
});
