import { hostname } from "node:os";
import type { JobRecord, JobsRepository } from "@fleet/db";
import type { Clock } from "@fleet/shared";
import type { Logger } from "pino";
import { describeJobError, isPermanentJobError } from "./job-errors.ts";

export type JobHandler = (job: JobRecord) => Promise<void>;

export interface JobConsumerOptions {
  jobs: JobsRepository;
  /** Handlers by job kind; only these kinds are claimed. */
  handlers: Readonly<Record<string, JobHandler>>;
  clock: Clock;
  logger: Logger;
  leaseMs: number;
  pollMs: number;
  concurrency: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  /** Called after each finished job (the relay re-reads forwards then). */
  onJobFinished?: (job: JobRecord) => void;
}

/** Retry delay after the n-th failed attempt: base, 2x, 4x ... capped. */
export const backoffDelay = (attempts: number, baseMs: number, maxMs: number): number =>
  Math.min(maxMs, baseMs * 2 ** Math.max(0, Math.min(attempts - 1, 30)));

/**
 * Runs durable jobs: claims due jobs (one lease per job, see JobsRepository), runs their handler,
 * keeps the lease alive while it runs, and records success, a retry with backoff, or failure.
 * At-least-once: handlers are idempotent, because an agent that dies mid-job leaves the job to be
 * claimed again when its lease runs out.
 */
export class JobConsumer {
  readonly #o: JobConsumerOptions;
  readonly #kinds: string[];
  readonly workerId: string;
  readonly #inFlight = new Set<Promise<void>>();
  #timer: NodeJS.Timeout | undefined;
  #wake: (() => void) | undefined;
  #loop: Promise<void> | undefined;
  #stopped = false;

  constructor(options: JobConsumerOptions) {
    this.#o = options;
    this.#kinds = Object.keys(options.handlers);
    this.workerId = `${hostname()}:${process.pid}:${crypto.randomUUID().slice(0, 8)}`;
  }

  /** Starts the claim loop in the background. */
  start(): void {
    if (this.#loop) return;
    this.#loop = this.#run();
  }

  /** Looks for work now instead of at the next poll. */
  wake(): void {
    this.#wake?.();
  }

  /**
   * Claims and runs one job to completion, in the caller's flow. False when nothing is due. Tests
   * drive the queue with this; the background loop uses the same path.
   */
  async runOnce(): Promise<boolean> {
    const job = await this.#o.jobs.claim(this.workerId, this.#o.clock.now(), this.#o.leaseMs, this.#kinds);
    if (!job) return false;
    await this.#execute(job);
    return true;
  }

  /** Runs jobs until none is due (tests). */
  async drain(): Promise<number> {
    let n = 0;
    while (await this.runOnce()) n++;
    return n;
  }

  /** Stops claiming and waits for running jobs to finish (their own timeouts bound the wait). */
  async close(): Promise<void> {
    this.#stopped = true;
    this.wake();
    await this.#loop;
    await Promise.allSettled([...this.#inFlight]);
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      try {
        while (!this.#stopped && this.#inFlight.size < this.#o.concurrency) {
          const job = await this.#o.jobs.claim(this.workerId, this.#o.clock.now(), this.#o.leaseMs, this.#kinds);
          if (!job) break;
          const running: Promise<void> = this.#execute(job).finally(() => {
            this.#inFlight.delete(running);
            this.wake();
          });
          this.#inFlight.add(running);
        }
      } catch (error) {
        // The database may be briefly unreachable; the next poll tries again.
        this.#o.logger.error({ err: error }, "claiming jobs failed");
      }
      if (this.#stopped) break;
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
        this.#timer = setTimeout(resolve, this.#o.pollMs);
      });
      clearTimeout(this.#timer);
      this.#wake = undefined;
    }
  }

  async #execute(job: JobRecord): Promise<void> {
    const { jobs, clock, logger } = this.#o;
    const log = logger.child({ jobId: job.id, kind: job.kind, attempt: job.attempts });
    const handler = this.#o.handlers[job.kind];
    // Renew well before expiry so a slow router never lets a second agent in beside us.
    const renew = setInterval(
      () => {
        jobs.extendLease(job.id, this.workerId, clock.now(), this.#o.leaseMs).catch((error: unknown) => {
          log.warn({ err: error }, "could not extend job lease");
        });
      },
      Math.max(100, Math.floor(this.#o.leaseMs / 3)),
    );
    try {
      if (!handler) throw new Error(`no handler for job kind ${job.kind}`);
      await handler(job);
      if (!(await jobs.complete(job.id, this.workerId, clock.now()))) {
        log.warn("job finished after its lease passed to another agent; that agent repeats it");
      }
    } catch (error) {
      const permanent = isPermanentJobError(error);
      const outcome = await jobs
        .fail(job.id, this.workerId, clock.now(), describeJobError(error), {
          retryInMs: backoffDelay(job.attempts, this.#o.backoffBaseMs, this.#o.backoffMaxMs),
          permanent,
        })
        .catch((failError: unknown) => {
          log.error({ err: failError }, "could not record job failure");
          return "lost" as const;
        });
      const level = outcome === "failed" ? "error" : "warn";
      log[level]({ err: error, outcome }, outcome === "failed" ? "job failed for good" : "job failed; will retry");
    } finally {
      clearInterval(renew);
      this.#o.onJobFinished?.(job);
    }
  }
}
