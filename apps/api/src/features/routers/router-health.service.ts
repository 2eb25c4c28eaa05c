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
  HEALTH_SERIES_LIMITS,
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

/** A bound as sent: an ISO 8601 date-time (a date alone is its UTC midnight). */
const parseBound = (value: string, field: string): number => {
  if (!/^\d{4}-\d{2}-\d{2}([T ][0-9:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(value))
    throw invalid(field, "must be an ISO 8601 date-time");
  const ms = Date.parse(value.length === 10 ? `${value}T00:00:00Z` : value);
  if (!Number.isFinite(ms)) throw invalid(field, "must be an ISO 8601 date-time");
  return ms;
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
