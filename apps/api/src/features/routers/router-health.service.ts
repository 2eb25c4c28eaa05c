import type {
  HealthValues,
  InterfaceLatestRecord,
  ResourceHour,
  ResourceSample,
  RouterRecord,
  TrafficRecord,
} from "@fleet/db";
import {
  AppError,
  type Clock,
  formatIsoUtc,
  HEALTH_INTERFACE_NAME_MAX,
  HEALTH_SERIES_LIMITS,
  isHealthInterfaceName,
  type TInterfaceState,
  type TResourcePoint,
  type TRouterResourcesQuery,
  type TRouterTrafficQuery,
  type TTrafficPoint,
} from "@fleet/shared";

/** The reads the service needs (HealthSeriesRepository in production). */
export interface HealthSeriesStore {
  resourceSamples(routerId: string, fromMs: number, toMs: number): Promise<ResourceSample[]>;
  resourceHours(routerId: string, fromMs: number, toMs: number): Promise<ResourceHour[]>;
  traffic(
    routerId: string,
    name: string,
    tier: "samples" | "hourly",
    fromMs: number,
    toMs: number,
  ): Promise<TrafficRecord[]>;
  interfaces(routerId: string): Promise<InterfaceLatestRecord[]>;
}

export interface RouterHealthServiceDeps {
  series: HealthSeriesStore;
  routers: { findInTeam(teamId: string, routerId: string): Promise<RouterRecord | null> };
  clock: Clock;
}

const notFound = () => new AppError("not_found", "Router not found.");

const invalid = (field: string, message: string) =>
  new AppError("validation_failed", `'${field}' ${message}.`, { fields: { [field]: [message] } });

/** `YYYY-MM-DD`, optionally `THH:MM[:SS[.fraction]]` (or a space) and a zone (`Z`, `+HH:MM`, `+HHMM`). */
const BOUND = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/**
 * A bound as sent: an ISO 8601 date-time; a date alone is its UTC midnight and a time without a
 * zone is UTC, whatever the server's zone. A calendar day that does not exist (February 30) or an
 * hour, minute, second or offset out of range is refused, not rolled over.
 */
const parseBound = (value: string, field: string): number => {
  const match = BOUND.exec(value);
  if (!match) throw invalid(field, "must be an ISO 8601 date-time");
  const [, year, month, day, hour = "00", minute = "00", second = "00", fraction = "", zone = "Z"] = match;
  const [y, mo, d, h, mi, s] = [year, month, day, hour, minute, second].map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const [offsetHours, offsetMinutes] = zone === "Z" ? [0, 0] : [Number(zone.slice(1, 3)), Number(zone.slice(-2))];
  const date = new Date(0);
  date.setUTCFullYear(y, mo - 1, d); // years 0000-0099 as written, not 19xx
  const valid =
    date.getUTCFullYear() === y &&
    date.getUTCMonth() === mo - 1 &&
    date.getUTCDate() === d &&
    h < 24 &&
    mi < 60 &&
    s < 60 &&
    offsetHours < 24 &&
    offsetMinutes < 60;
  if (!valid) throw invalid(field, "must be an ISO 8601 date-time");
  const offset = (zone.startsWith("-") ? -1 : 1) * (offsetHours * 60 + offsetMinutes);
  return date.getTime() + ((h * 60 + mi - offset) * 60 + s) * 1000 + Math.floor(Number(`0${fraction}`) * 1000);
};

const VALUE_FIELDS = [
  ["cpu_load", "cpuLoad"],
  ["memory_used_percent", "memoryUsedPercent"],
  ["disk_used_percent", "diskUsedPercent"],
  ["temperature", "temperature"],
  ["voltage", "voltage"],
  ["ping_loss_percent", "pingLossPercent"],
  ["ping_rtt_ms", "pingRttMs"],
] as const satisfies ReadonlyArray<readonly [string, keyof HealthValues]>;

const round = (value: number | null): number | null => (value === null ? null : Math.round(value * 100) / 100);

const toSamplePoint = (sample: ResourceSample): TResourcePoint => {
  const point: Record<string, unknown> = { at: formatIsoUtc(new Date(sample.atMs)) };
  for (const [field, key] of VALUE_FIELDS) point[field] = round(sample.values[key]);
  return point as TResourcePoint;
};

const toHourPoint = (hour: ResourceHour): TResourcePoint => {
  const point: Record<string, unknown> = { at: formatIsoUtc(new Date(hour.atMs)) };
  for (const [field, key] of VALUE_FIELDS) {
    point[field] = round(hour.avg[key]);
    point[`min_${field}`] = round(hour.min[key]);
    point[`max_${field}`] = round(hour.max[key]);
  }
  return point as TResourcePoint;
};

const toTrafficPoint = (record: TrafficRecord): TTrafficPoint => ({
  at: formatIsoUtc(new Date(record.atMs)),
  rx_bps: record.rxBps === null ? null : Math.round(record.rxBps),
  tx_bps: record.txBps === null ? null : Math.round(record.txBps),
  rx_errors: record.rxErrors,
  tx_errors: record.txErrors,
});

const toInterfaceState = (record: InterfaceLatestRecord): TInterfaceState => ({
  name: record.name,
  running: record.running,
  rx_bytes: record.rxBytes,
  tx_bytes: record.txBytes,
  rx_errors: record.rxErrors,
  tx_errors: record.txErrors,
  rx_bps: record.rxBps === null ? null : Math.round(record.rxBps),
  tx_bps: record.txBps === null ? null : Math.round(record.txBps),
  reported_at: formatIsoUtc(record.reportedAt),
});

/**
 * A router's health over time (docs/api.md "Health"): resource and traffic series at the sample
 * (`5m`) or hourly (`1h`) tier, and the latest interface states. Scoped to the team: another
 * team's or an unknown router answers 404. A span of more than `maxPoints` steps is 422.
 */
export class RouterHealthService {
  readonly #deps: RouterHealthServiceDeps;
  constructor(deps: RouterHealthServiceDeps) {
    this.#deps = deps;
  }

  async resources(teamId: string, query: TRouterResourcesQuery): Promise<TResourcePoint[]> {
    const { step, fromMs, toMs } = this.#range(query);
    const router = await this.#find(teamId, query.router_id);
    if (step === "1h") return (await this.#deps.series.resourceHours(router.id, fromMs, toMs)).map(toHourPoint);
    return (await this.#deps.series.resourceSamples(router.id, fromMs, toMs)).map(toSamplePoint);
  }

  async interfaces(teamId: string, routerId: string): Promise<TInterfaceState[]> {
    const router = await this.#find(teamId, routerId);
    return (await this.#deps.series.interfaces(router.id)).map(toInterfaceState);
  }

  async traffic(teamId: string, query: TRouterTrafficQuery): Promise<TTrafficPoint[]> {
    if (!isHealthInterfaceName(query.name))
      throw invalid(
        "name",
        `must be an interface name of 1 to ${HEALTH_INTERFACE_NAME_MAX} characters, no control characters`,
      );
    const { step, fromMs, toMs } = this.#range(query);
    const router = await this.#find(teamId, query.router_id);
    const tier = step === "1h" ? "hourly" : "samples";
    return (await this.#deps.series.traffic(router.id, query.name, tier, fromMs, toMs)).map(toTrafficPoint);
  }

  #range(query: TRouterResourcesQuery): { step: "5m" | "1h"; fromMs: number; toMs: number } {
    const step = query.step ?? "5m";
    const toMs = query.to === undefined ? this.#deps.clock.nowMs() + 1 : parseBound(query.to, "to");
    const fromMs =
      query.from === undefined ? toMs - HEALTH_SERIES_LIMITS.defaultSpanMs[step] : parseBound(query.from, "from");
    if (fromMs >= toMs) throw invalid("from", "must be before to");
    if ((toMs - fromMs) / HEALTH_SERIES_LIMITS.stepMs[step] > HEALTH_SERIES_LIMITS.maxPoints)
      throw invalid("to", `must be at most ${HEALTH_SERIES_LIMITS.maxPoints} steps of ${step} after from`);
    return { step, fromMs, toMs };
  }

  async #find(teamId: string, routerId: string): Promise<RouterRecord> {
    const router = await this.#deps.routers.findInTeam(teamId, routerId);
    if (!router) throw notFound();
    return router;
  }
}
