import { AppError, WorkerBusyError, WorkerRunner, WorkerTimeoutError, type WorkerReply } from "@fleet/shared";

/** What the diff thread reads (`workerData`). */
export interface DiffJob {
  oldName: string;
  newName: string;
  oldText: string;
  newText: string;
  oldHeader: string | undefined;
  newHeader: string | undefined;
  /** jsdiff's own time limit; the runner terminates the thread a little after it. */
  timeoutMs: number;
}

/** The unified diff, or null when jsdiff gave up at its time limit. */
export type DiffReply = WorkerReply<string | null>;

/** docs/api.md "Configuration backups": how long one diff may compute. */
export const DIFF_TIMEOUT_MS = 5_000;

export type DiffPatch = (job: Omit<DiffJob, "timeoutMs">) => Promise<string>;

const tooFarApart = () =>
  new AppError(
    "diff_too_large",
    `The two versions are too far apart to diff within ${DIFF_TIMEOUT_MS / 1000} s. Download both with GET .../backups/{id} and compare them locally.`,
  );

/**
 * Unified diffs of two exports off the event loop (docs/api.md "Configuration backups"): one
 * thread at a time per process, a short waiting line (more: 503 with `Retry-After`), and a time
 * limit (past it: 422 `diff_too_large`).
 */
export const offLoopPatch = (timeoutMs = DIFF_TIMEOUT_MS): DiffPatch => {
  const runner = new WorkerRunner<DiffJob, string | null>(new URL("./config-diff.worker.ts", import.meta.url), {
    timeoutMs: timeoutMs + 1_000,
    maxRunning: 1,
    maxWaiting: 8,
  });
  return async (job) => {
    let patch: string | null;
    try {
      patch = await runner.run({ ...job, timeoutMs });
    } catch (error) {
      if (error instanceof WorkerTimeoutError) throw tooFarApart();
      if (error instanceof WorkerBusyError) {
        throw new AppError("capacity_exhausted", "Too many diffs are being computed; try again in a few seconds.", {
          retryAfterSeconds: 5,
        });
      }
      throw error;
    }
    if (patch === null) throw tooFarApart();
    return patch;
  };
};
