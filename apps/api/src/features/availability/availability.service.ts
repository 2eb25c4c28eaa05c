import type {
  CoverageRecord,
  FleetAvailabilityRow,
  MaintenanceWindowRecord,
  RouterListItem,
  RouterRecord,
} from "@fleet/db";
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
  type TimeInterval,
} from "@fleet/shared";
import { mergedPeriods } from "../alerts/router-selection.ts";

/** What the reports read (AvailabilityRepository, RoutersRepository). */
export interface AvailabilityReader {
  downtimeHours(routerId: string, from: Date, to: Date): Promise<Map<number, number>>;
  fleet(teamId: string, from: Date, to: Date): Promise<FleetAvailabilityRow[]>;
}

export interface AvailabilityRouters {
  findInTeam(teamId: string, routerId: string): Promise<RouterRecord | null>;
  /** Every router of the team (no limit): the maintenance selection needs their tags. */
  listByTeam(filter: { teamId: string; sort: "name" }): Promise<{ router: RouterListItem }[]>;
  coverage(): Promise<CoverageRecord | null>;
}

export interface AvailabilityServiceDeps {
  availability: AvailabilityReader;
  routers: AvailabilityRouters;
  clock: Clock;
  /** The organization's maintenance windows, whose time the reports count apart (docs/api.md "Availability"). */
  maintenanceWindows?: (organizationId: string) => Promise<MaintenanceWindowRecord[]>;
}

const HOUR_MS = 3_600_000;
const round2 = (n: number) => Math.round(n * 100) / 100;

/**
 * Maintenance figures of one window of a report: the minutes the router spent inside maintenance
 * windows, and its availability with that time left out. Downtime is stored per UTC hour, so the
 * downtime inside maintenance is taken per hour as at most the maintenance in that hour (an
 * outage during planned work is the planned work's).
 */
const maintenanceFigures = (
  maintenance: ReadonlyArray<{ start: number; end: number }>,
  window: { start: Date; end: Date },
  stored: ReadonlyMap<number, number>,
  ongoing: TimeInterval | null,
  secondsDown: number,
): { maintenance_minutes: number; availability_percent: number } | null => {
  const [ws, we] = [window.start.getTime(), window.end.getTime()];
  const inside = (from: number, to: number) =>
    maintenance.reduce((sum, p) => sum + Math.max(0, Math.min(p.end, to, we) - Math.max(p.start, from, ws)), 0);
  const maintenanceMs = inside(ws, we);
  if (maintenanceMs <= 0) return null;
  let downInside = 0;
  for (const [hour, seconds] of stored) {
    if (hour + HOUR_MS <= ws || hour >= we) continue;
    downInside += Math.min(seconds, inside(hour, hour + HOUR_MS) / 1000);
  }
  if (ongoing) downInside += inside(ongoing.from.getTime(), ongoing.to.getTime()) / 1000;
  const restMs = we - ws - maintenanceMs;
  const downOutside = Math.max(0, secondsDown - downInside) * 1000;
  return {
    maintenance_minutes: round2(maintenanceMs / 60_000),
    availability_percent: restMs <= 0 ? 100 : round2(Math.max(0, 100 - (Math.min(downOutside, restMs) / restMs) * 100)),
  };
};

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
    const [stored, coverage, windows] = await Promise.all([
      this.#deps.availability.downtimeHours(router.id, range.start, range.end),
      this.#deps.routers.coverage(),
      this.#deps.maintenanceWindows?.(router.organizationId) ?? Promise.resolve([]),
    ]);
    const ongoing = ongoingDowntime(router.lastSeenAt, coverage, now);
    const periods = availabilityPeriods({ range, now, granularity: query.granularity ?? "day", stored, ongoing });
    const measuredEnd = new Date(Math.min(range.end.getTime(), now.getTime()));
    const maintenance = mergedPeriods(windows, router, range.start, measuredEnd);
    return periods.map((p, i) => {
      const window = {
        start: new Date(Math.max(p.periodStart.getTime(), range.start.getTime())),
        end: periods[i + 1]?.periodStart ?? measuredEnd,
      };
      const figures = maintenanceFigures(maintenance, window, stored, ongoing, p.minutesDown * 60);
      return {
        period_start: formatIsoUtc(p.periodStart),
        minutes_down: p.minutesDown,
        maintenance_minutes: figures?.maintenance_minutes ?? 0,
        availability_percent: figures?.availability_percent ?? p.availabilityPercent,
        availability_percent_including_maintenance: p.availabilityPercent,
      };
    });
  }

  /** Every router of the team over the range, worst first (most downtime, then name). */
  async fleet(teamId: string, query: TFleetAvailabilityQuery): Promise<TFleetAvailability["data"]> {
    const now = this.#deps.clock.now();
    const range = parseReportRange(query, now);
    const measuredEnd = new Date(Math.min(range.end.getTime(), now.getTime()));
    const windowMs = Math.max(0, measuredEnd.getTime() - range.start.getTime());
    const [rows, coverage, routers] = await Promise.all([
      this.#deps.availability.fleet(teamId, range.start, range.end),
      this.#deps.routers.coverage(),
      this.#deps.maintenanceWindows
        ? this.#deps.routers.listByTeam({ teamId, sort: "name" }).then((rows) => rows.map((r) => r.router))
        : Promise.resolve([]),
    ]);
    const windows = routers[0] ? ((await this.#deps.maintenanceWindows?.(routers[0].organizationId)) ?? []) : [];
    const routerOf = new Map(routers.map((r) => [r.id, r]));
    const window = { start: range.start, end: measuredEnd };
    const report = await Promise.all(
      rows.map(async (row) => {
        const ongoing = ongoingDowntime(row.lastSeenAt, coverage, now);
        const seconds = row.secondsDown + (ongoing ? secondsDownIn(window, new Map(), ongoing) : 0);
        const figures = availabilityOf(seconds, windowMs);
        const router = routerOf.get(row.routerId);
        const maintenance =
          router && windows.length > 0 ? mergedPeriods(windows, router, range.start, measuredEnd) : [];
        // Hourly downtime is read only for a router that had maintenance in the range.
        const apart =
          maintenance.length > 0
            ? maintenanceFigures(
                maintenance,
                window,
                await this.#deps.availability.downtimeHours(row.routerId, range.start, range.end),
                ongoing,
                seconds,
              )
            : null;
        return {
          router_id: row.routerId,
          name: row.name,
          minutes_down: figures.minutesDown,
          maintenance_minutes: apart?.maintenance_minutes ?? 0,
          availability_percent: apart?.availability_percent ?? figures.availabilityPercent,
          availability_percent_including_maintenance: figures.availabilityPercent,
          faults: row.faults,
        };
      }),
    );
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
