import type { MaintenanceWindowRecord, RouterSelectorRecord } from "@fleet/db";
import { weeklyOccurrences } from "@fleet/shared";

/** What a selector looks at. */
export interface SelectableRouter {
  id: string;
  teamId: string;
  tags: readonly string[];
}

/** Every condition given holds: the team, any of the tags, one of the ids. None: every router. */
export const selects = (selector: RouterSelectorRecord, router: SelectableRouter): boolean =>
  (selector.team_id === undefined || selector.team_id === router.teamId) &&
  (selector.tags === undefined || selector.tags.length === 0 || selector.tags.some((t) => router.tags.includes(t))) &&
  (selector.router_ids === undefined || selector.router_ids.length === 0 || selector.router_ids.includes(router.id));

/** The periods of a window that overlap [from, to). */
export const windowPeriods = (
  window: MaintenanceWindowRecord,
  from: Date,
  to: Date,
): Array<{ start: Date; end: Date }> => {
  if (window.weekly) return weeklyOccurrences(window.weekly, from, to);
  if (!window.startsAt || !window.endsAt) return [];
  return window.startsAt < to && window.endsAt > from ? [{ start: window.startsAt, end: window.endsAt }] : [];
};

/**
 * When the maintenance covering `router` at `at` ends (following windows that touch or overlap
 * it), or null when no window covers it then.
 */
export const maintenanceEnd = (
  windows: readonly MaintenanceWindowRecord[],
  router: SelectableRouter,
  at: Date,
): Date | null => {
  const mine = windows.filter((w) => selects(w.routers, router));
  let end: Date | null = null;
  let probe = at;
  for (let i = 0; i < 50; i++) {
    const next = new Date(probe.getTime() + 1);
    const covering = mine
      .flatMap((w) => windowPeriods(w, probe, next))
      .filter((p) => p.start <= probe && p.end > probe);
    if (covering.length === 0) return end;
    end = new Date(Math.max(...covering.map((p) => p.end.getTime())));
    probe = end;
  }
  return end;
};

/** Minutes of [from, to) inside any of the windows covering `router` (overlaps counted once). */
export const maintenanceMinutes = (
  windows: readonly MaintenanceWindowRecord[],
  router: SelectableRouter,
  from: Date,
  to: Date,
): number => mergedPeriods(windows, router, from, to).reduce((sum, p) => sum + (p.end - p.start), 0) / 60_000;

/** The windows' periods for `router`, clipped to [from, to), merged, in order (milliseconds). */
export const mergedPeriods = (
  windows: readonly MaintenanceWindowRecord[],
  router: SelectableRouter,
  from: Date,
  to: Date,
): Array<{ start: number; end: number }> => {
  const periods = windows
    .filter((w) => selects(w.routers, router))
    .flatMap((w) => windowPeriods(w, from, to))
    .map((p) => ({ start: Math.max(p.start.getTime(), from.getTime()), end: Math.min(p.end.getTime(), to.getTime()) }))
    .filter((p) => p.end > p.start)
    .sort((a, b) => a.start - b.start);
  const merged: Array<{ start: number; end: number }> = [];
  for (const p of periods) {
    const last = merged.at(-1);
    if (last && p.start <= last.end) last.end = Math.max(last.end, p.end);
    else merged.push({ ...p });
  }
  return merged;
};
