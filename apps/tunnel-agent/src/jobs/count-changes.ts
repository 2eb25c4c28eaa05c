import { normalizeConfigExport, type WorkerReply, WorkerRunner } from "@fleet/shared";

export interface LineChanges {
  added: number;
  removed: number;
}

/** What the counting thread reads (`workerData`): two normalized exports. */
export interface CountJob {
  previous: string;
  next: string;
  /** jsdiff's own time limit; the runner terminates the thread a little after it. */
  timeoutMs: number;
}

/** The counts, or null when jsdiff gave up at its time limit. */
export type CountReply = WorkerReply<LineChanges | null>;

/** How long the diff of a stored version may compute before the linear count stands in. */
export const COUNT_TIMEOUT_MS = 2_000;

const splitLines = (text: string): string[] => {
  if (text === "") return [];
  const lines = text.split("\n");
  if (text.endsWith("\n")) lines.pop();
  return lines;
};

/**
 * Lines added and removed as a multiset difference: linear in the texts, exact unless lines moved
 * (a moved line counts as unchanged). Stands in for the diff when that runs out of time.
 */
export const countChangedLinesLinear = (previous: string, next: string): LineChanges => {
  const counts = new Map<string, number>();
  for (const line of splitLines(normalizeConfigExport(previous))) counts.set(line, (counts.get(line) ?? 0) + 1);
  let added = 0;
  for (const line of splitLines(normalizeConfigExport(next))) {
    const left = counts.get(line) ?? 0;
    if (left > 0) counts.set(line, left - 1);
    else added++;
  }
  let removed = 0;
  for (const left of counts.values()) removed += left;
  return { added, removed };
};

/**
 * Lines added and removed between two exports, their dated first lines ignored (the
 * `router.config.changed` audit entry): jsdiff in a worker thread, so the agent's event loop (and
 * the all-in-one's heartbeats and API) never waits for it; past `timeoutMs`, or while the one thread
 * is busy with a long line, the linear count answers.
 */
export const offLoopLineCounts = (timeoutMs = COUNT_TIMEOUT_MS) => {
  const runner = new WorkerRunner<CountJob, LineChanges | null>(new URL("./count-changes.worker.ts", import.meta.url), {
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
