import type { CoverageRecord, FleetAvailabilityRow, RouterRecord } from "@fleet/db";
import {
  AppError,
  availabilityOf,
  availabilityPeriods,
  type Clock,
  formatIsoUtc,
  ongoingDowntime,
  parseReportRange,
  secondsDownIn,
  type TFleetAvailability,
  type TFleetAvailabilityQuery,
  type TRouterAvailability,
  type TRouterAvailabilityQuery,
} from "@fleet/shared";

/** What the reports read (AvailabilityRepository, RoutersRepository). */
export interface AvailabilityReader {
  downtimeHours(routerId: string, from: Date, to: Date): Promise<Map<number, number>>;
  fleet(teamId: string, from: Date, to: Date): Promise<FleetAvailabilityRow[]>;
}

export interface AvailabilityRouters {
  findInTeam(teamId: string, routerId: string): Promise<RouterRecord | null>;
  coverage(): Promise<CoverageRecord | null>;
}

export interface AvailabilityServiceDeps {
  availability: AvailabilityReader;
  routers: AvailabilityRouters;
  clock: Clock;
}

/** Availability history and reports (docs/api.md "Availability"). */
export class AvailabilityService {
  readonly #deps: AvailabilityServiceDeps;
  constructor(deps: AvailabilityServiceDeps) {
    this.#deps = deps;
  }

  /** One row per UTC day or month of the range, oldest first. */
  async router(teamId: string, query: TRouterAvailabilityQuery): Promise<TRouterAvailability["data"]> {
    const now = this.#deps.clock.now();
    // A bad range is the caller's error whatever the router: checked before the lookup.
    const range = parseReportRange(query, now);
    const router = await this.#deps.routers.findInTeam(teamId, query.router_id);
    if (!router) throw new AppError("not_found", "Router not found.");
    const [stored, coverage] = await Promise.all([
      this.#deps.availability.downtimeHours(router.id, range.start, range.end),
      this.#deps.routers.coverage(),
    ]);
    const periods = availabilityPeriods({
      range,
      now,
      granularity: query.granularity ?? "day",
      stored,
      ongoing: ongoingDowntime(router.lastSeenAt, coverage, now),
    });
    return periods.map((p) => ({
      period_start: formatIsoUtc(p.periodStart),
      minutes_down: p.minutesDown,
      availability_percent: p.availabilityPercent,
    }));
  }

  /** Every router of the team over the range, worst first (most downtime, then name). */
  async fleet(teamId: string, query: TFleetAvailabilityQuery): Promise<TFleetAvailability["data"]> {
    const now = this.#deps.clock.now();
    const range = parseReportRange(query, now);
    const measuredEnd = new Date(Math.min(range.end.getTime(), now.getTime()));
    const windowMs = Math.max(0, measuredEnd.getTime() - range.start.getTime());
    const [rows, coverage] = await Promise.all([
      this.#deps.availability.fleet(teamId, range.start, range.end),
      this.#deps.routers.coverage(),
    ]);
    const window = { start: range.start, end: measuredEnd };
    const report = rows.map((row) => {
      const ongoing = ongoingDowntime(row.lastSeenAt, coverage, now);
      const seconds = row.secondsDown + (ongoing ? secondsDownIn(window, new Map(), ongoing) : 0);
      const figures = availabilityOf(seconds, windowMs);
      return {
        router_id: row.routerId,
        name: row.name,
        minutes_down: figures.minutesDown,
        availability_percent: figures.availabilityPercent,
        faults: row.faults,
      };
    });
    report.sort(
      (a, b) =>
        a.availability_percent - b.availability_percent ||
        b.minutes_down - a.minutes_down ||
        a.name.localeCompare(b.name) ||
        a.router_id.localeCompare(b.router_id),
    );
    return report;
  }
}
