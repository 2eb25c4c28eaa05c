import { diffLines } from "diff";
import { normalizeConfigExport, type WorkerReply, WorkerRunner } from "@fleet/shared";

import { countDiffParts, countLinesMultiset, type LineChanges } from "./line-counts.ts";

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

/** Lines of both normalized exports together up to which the diff may run on the event loop. */
export const INLINE_DIFF_LINES = 2_000;
/** Lines added plus removed up to which it does: jsdiff stops there (its `maxEditLength`). */
export const INLINE_DIFF_EDITS = 32;

const lineCount = (text: string): number => {
  let n = 0;
  for (let at = text.indexOf("\n"); at >= 0; at = text.indexOf("\n", at + 1)) n++;
  return n;
};

/**
 * The diff's counts of two normalized exports when they are small and differ in few lines (a
 * change step's backup, a daily read of a router someone touched): jsdiff bounded to
 * INLINE_DIFF_EDITS, at most about a millisecond even on hostile texts (docs/scale.md "The
 * model"). Undefined otherwise: the worker thread counts.
 */
export const countSmallChange = (previous: string, next: string): LineChanges | undefined => {
  if (lineCount(previous) + lineCount(next) > INLINE_DIFF_LINES) return undefined;
  const parts = diffLines(previous, next, { maxEditLength: INLINE_DIFF_EDITS });
  return parts ? countDiffParts(parts) : undefined;
};

/**
 * Lines added and removed between two exports, their dated first lines ignored (the
 * `router.config.changed` audit entry): a small change here (`countSmallChange`: a thread costs
 * about 140 ms of CPU to start), else jsdiff in a worker thread, so the agent's event loop (and the
 * all-in-one's heartbeats and API) never waits for it; past `timeoutMs` the thread answers the
 * linear count instead, and when no thread answers (a long waiting line) this one counts linearly.
 */
export const offLoopLineCounts = (timeoutMs = COUNT_TIMEOUT_MS) => {
  const runner = new WorkerRunner<CountJob, LineChanges>(new URL("./count-changes.worker.ts", import.meta.url), {
    timeoutMs: timeoutMs + 1_000,
    maxRunning: 1,
    maxWaiting: 16,
  });
  return async (previous: string, next: string): Promise<LineChanges> => {
    const job = { previous: normalizeConfigExport(previous), next: normalizeConfigExport(next), timeoutMs };
    const small = countSmallChange(job.previous, job.next);
    if (small) return small;
    const counted = await runner.run(job).catch(() => null);
    return counted ?? countLinesMultiset(job.previous, job.next);
  };
};
