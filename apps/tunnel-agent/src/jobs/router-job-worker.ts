import {
  CHANGE_JOB_PRIORITY,
  type EngineJob,
  INTERACTIVE_JOB_PRIORITY,
  type JobEngine,
  type JobRecord,
  ROUTER_JOBS_DEAD_LETTER,
  ROUTER_JOBS_QUEUE,
  type RouterJobData,
  type RouterJobLocks,
  runJob,
  type TJobOutcome,
} from "@fleet/db";
import type { TRouterJobKind } from "@fleet/shared";
import type { Logger } from "pino";
import { describeJobError, isPermanentJobError } from "./job-errors.ts";

export type JobHandler = (job: JobRecord) => Promise<void>;

/**
 * Change steps one worker of the change lane takes per fetch. A batch is completed in the queue
 * when its last step ends (each step records its result itself, at once), so it is kept small.
 */
export const CHANGE_FETCH_BATCH = 8;

export interface RouterJobWorkerOptions {
  engine: JobEngine;
  /** Handlers by job kind (ROUTER_JOB_KINDS); a kind without one fails its job. */
  handlers: Readonly<Partial<Record<TRouterJobKind, JobHandler>>>;
  /** Every attempt runs holding its router's lock (an attempt past its lease may still run beside its retry). */
  locks: RouterJobLocks;
  logger: Logger;
  /** Jobs this agent runs at once (of different routers: one router's jobs never overlap). */
  concurrency: number;
  /**
   * Further workers that take only interactive jobs (forward and access apply/remove,
   * INTERACTIVE_JOB_PRIORITY): however many slow backups fill the others, one of these is free.
   */
  interactiveConcurrency: number;
  /**
   * Further workers that take fleet change steps (CHANGE_JOB_PRIORITY) and interactive jobs: a
   * change's steps mostly wait on their routers, so many run at once without holding bulk work back.
   */
  changeConcurrency?: number;
  /** Poll period when no notification arrives (a job held back behind its router's head). */
  pollSeconds: number;
  /** Called after each attempt (the relay re-reads forwards then; metrics). */
  onJobFinished?: (job: JobRecord, outcome: TJobOutcome, durationMs: number) => void;
}

const toRecord = (job: EngineJob<RouterJobData>): JobRecord => ({
  id: job.id,
  kind: job.data.kind,
  payload: job.data,
  attempts: job.retryCount + 1,
});

/**
 * Runs the router jobs of the job engine (`router.jobs`, see packages/db router-jobs.ts): a
 * handler's error fails the attempt (retried with backoff, then dead-lettered), a permanent one
 * dead-letters at once. At-least-once: an agent that dies mid-job leaves the attempt active until
 * the queue's lease (`expireInSeconds`) passes, then another agent runs it again, so handlers are
 * idempotent. An attempt that outlives its lease while its agent is alive (a slow router, a loaded
 * machine) is retried too: the router's lock keeps the retry waiting until the stale attempt ends.
 */
export class RouterJobWorker {
  readonly #o: RouterJobWorkerOptions;
  #started = false;

  constructor(options: RouterJobWorkerOptions) {
    this.#o = options;
  }

  #handle = async (job: EngineJob<RouterJobData>): Promise<void> => {
    const handler = this.#o.handlers[job.data.kind];
    if (!handler) throw new Error(`no handler for job kind ${job.data.kind}`);
    try {
      await this.#o.locks.run(job.data.router_id, () => handler(toRecord(job)));
    } catch (error) {
      // The job's logger only when there is something to say (not one per job: a wave runs hundreds).
      const log = this.#o.logger.child({ jobId: job.id, kind: job.data.kind, attempt: job.retryCount + 1 });
      log.warn({ err: error }, "job attempt failed");
      throw error;
    }
  };

  #settled = (job: EngineJob<unknown>, outcome: TJobOutcome, durationMs: number) => {
    this.#o.onJobFinished?.(toRecord(job as EngineJob<RouterJobData>), outcome, durationMs);
  };

  /** Starts taking jobs in the background, and clearing dead-lettered ones. */
  async start(): Promise<void> {
    if (this.#started) return;
    this.#started = true;
    const work = {
      pollingIntervalSeconds: this.#o.pollSeconds,
      isPermanent: isPermanentJobError,
      describeError: describeJobError,
      onSettled: this.#settled,
    };
    // Every worker takes interactive jobs first (priority); the interactive lane takes nothing else.
    await this.#o.engine.work<RouterJobData>(
      ROUTER_JOBS_QUEUE,
      { ...work, localConcurrency: this.#o.concurrency },
      this.#handle,
    );
    await this.#o.engine.work<RouterJobData>(
      ROUTER_JOBS_QUEUE,
      { ...work, localConcurrency: this.#o.interactiveConcurrency, minPriority: INTERACTIVE_JOB_PRIORITY },
      this.#handle,
    );
    if (this.#o.changeConcurrency) {
      // A wave's steps arrive together: a few workers taking batches fetch them in a few queries,
      // where one worker per step would send a fetch each, on every poll and every notification.
      const batchSize = Math.min(CHANGE_FETCH_BATCH, this.#o.changeConcurrency);
      await this.#o.engine.work<RouterJobData>(
        ROUTER_JOBS_QUEUE,
        {
          ...work,
          localConcurrency: Math.ceil(this.#o.changeConcurrency / batchSize),
          batchSize,
          minPriority: CHANGE_JOB_PRIORITY,
        },
        this.#handle,
      );
    }
    // Polled as often as the queue itself: until this runs, the failed original holds its router's
    // later jobs back (pg-boss sends no notification when it moves a job to the dead-letter queue).
    const deadLetterPoll = { pollingIntervalSeconds: this.#o.pollSeconds };
    await this.#o.engine.work<RouterJobData>(ROUTER_JOBS_DEAD_LETTER, deadLetterPoll, async (job) => {
      const [original] = job.sourceId
        ? await this.#o.engine.findJobs<RouterJobData>(ROUTER_JOBS_QUEUE, { id: job.sourceId })
        : [];
      const lastError = (original?.output as { message?: unknown } | null | undefined)?.message;
      this.#o.logger.error(
        {
          jobId: job.sourceId,
          kind: job.data.kind,
          routerId: job.data.router_id,
          forwardId: job.data.forward_id,
          lastError,
        },
        "router job failed for good; the next reconciliation of the router repairs what it left undone",
      );
      // The failed original holds its router's place in the strictly ordered queue: free it. The
      // dead-letter copy stays, with the last error, for inspection (`npm run admin -- jobs`).
      if (job.sourceId) await this.#o.engine.boss.deleteJob(ROUTER_JOBS_QUEUE, job.sourceId);
      // The original's attempts go with the copy: the original itself is gone from here on.
      return {
        message: typeof lastError === "string" ? lastError : null,
        source_id: job.sourceId,
        attempts: original ? original.retryCount + 1 : null,
      };
    });
  }

  /**
   * Takes one due job and runs it in the caller's flow; false when none is due. Tests drive the
   * queue with this (`manualJobs`); a permanent failure is recorded as a failed attempt here.
   */
  async runOnce(): Promise<boolean> {
    const { boss } = this.#o.engine;
    const [job] = await boss.fetch<RouterJobData>(ROUTER_JOBS_QUEUE, { includeMetadata: true });
    if (!job) return false;
    const result = await runJob(job, this.#handle, { onSettled: this.#settled }, describeJobError);
    // Settled as this attempt: if its lease ran out meanwhile, the job is someone else's now.
    const attempt = { id: job.id, retryCount: job.retryCount };
    if (result.status === "completed") await boss.complete(ROUTER_JOBS_QUEUE, attempt);
    else await boss.fail(ROUTER_JOBS_QUEUE, attempt, result.output ?? null);
    return true;
  }

  /** Runs jobs until none is due. */
  async drain(): Promise<number> {
    let n = 0;
    while (await this.runOnce()) n++;
    return n;
  }

  async close(): Promise<void> {
    if (!this.#started) return;
    await this.#o.engine.offWork(ROUTER_JOBS_QUEUE);
    await this.#o.engine.offWork(ROUTER_JOBS_DEAD_LETTER);
  }
}
