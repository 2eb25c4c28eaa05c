import { normalizeConfigExport, type WorkerReply, WorkerRunner } from "@fleet/shared";

import { countLinesMultiset, type LineChanges } from "./line-counts.ts";

export type { LineChanges } from "./line-counts.ts";

/** What the counting thread reads (`workerData`): two normalized exports. */
export interface CountJob {
  previous: string;
  next: string;
  /** jsdiff's own time limit; the runner terminates the thread a little after it. */
  timeoutMs: number;
}

/** The counts: jsdiff's, or the linear count's when jsdiff gave up at its time limit. */
export type CountReply = WorkerReply<LineChanges>;

/** How long the diff of a stored version may compute before the linear count stands in. */
export const COUNT_TIMEOUT_MS = 2_000;

/**
 * Lines added and removed as a multiset difference of the normalized exports: linear in the texts,
 * exact unless lines moved (a moved line counts as unchanged). Stands in for the diff when that
 * runs out of time.
 */
export const countChangedLinesLinear = (previous: string, next: string): LineChanges =>
  countLinesMultiset(normalizeConfigExport(previous), normalizeConfigExport(next));

/**
 * Lines added and removed between two exports, their dated first lines ignored (the
 * `router.config.changed` audit entry): jsdiff in a worker thread, so the agent's event loop (and
 * the all-in-one's heartbeats and API) never waits for it; past `timeoutMs` the thread answers the
 * linear count instead, and when no thread answers (a long waiting line) this one counts linearly.
 */
export const offLoopLineCounts = (timeoutMs = COUNT_TIMEOUT_MS) => {
  const runner = new WorkerRunner<CountJob, LineChanges>(new URL("./count-changes.worker.ts", import.meta.url), {
    timeoutMs: timeoutMs + 1_000,
    maxRunning: 1,
    maxWaiting: 16,
  });
  return async (previous: string, next: string): Promise<LineChanges> => {
    const counted = await runner
      .run({ previous: normalizeConfigExport(previous), next: normalizeConfigExport(next), timeoutMs })
      .catch(() => null);
    return counted ?? countChangedLinesLinear(previous, next);
  };
};
