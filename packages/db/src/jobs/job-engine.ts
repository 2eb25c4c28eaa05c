import { type Db, fromPglite, type Job, type JobResult, type JobWithMetadata, PgBoss, type PGliteLike } from "pg-boss";
import type { Database } from "../database.ts";
import { recordJob, unwatchEngine, watchEngine } from "../metrics/job-metrics.ts";
import type { Query } from "../database.ts";
import { inSpan, SpanKind } from "@fleet/runtime";

/**
 * The job engine: pg-boss 12 on the process's own database (docs/operations.md "Metrics and probes"
 * for its queues). PGlite runs it in-process through pg-boss's PGlite adapter (`backend: 'pglite'`),
 * PostgreSQL through pg-boss's own small pool plus one LISTEN connection (docs/operations.md
 * "Configuration": JOB_POOL_MAX). pg-boss keeps its tables in the `pgboss` schema and migrates it
 * itself on start, beside (not inside) the application's migrations.
 */

/** How one queue behaves: retries, expiry of a dead worker's attempt, dead letter, retention. */
export interface JobQueueDefinition {
  name: string;
  /**
   * `key_strict_fifo`: jobs with one `singletonKey` run one at a time, in order, cluster-wide (a
   * unique index guarantees it); a key stays blocked while its head job waits for a retry or has
   * failed for good. `standard` (default): no ordering. pg-boss's `groupConcurrency` is only
   * best-effort on PostgreSQL (two fetches racing can both start a job of one group), so strict
   * per-router exclusion uses this policy. Fixed when the queue is created.
   */
  policy?: "standard" | "key_strict_fifo";
  /** Attempts after the first one (pg-boss `retryLimit`). */
  retryLimit?: number;
  /** First retry delay in seconds; doubled per attempt (with jitter) when `retryBackoff`. */
  retryDelaySeconds?: number;
  retryBackoff?: boolean;
  retryDelayMaxSeconds?: number;
  /** An active attempt older than this is taken to have died with its worker and is retried. */
  expireInSeconds?: number;
  /** Queue that receives a job once its retries are spent (created here too). */
  deadLetter?: string;
  /** How long finished jobs stay for inspection before pg-boss deletes them. */
  deleteAfterSeconds?: number;
  /** How long a job may wait unstarted before it is dropped. */
  retentionSeconds?: number;
}

export interface JobSendOptions {
  /**
   * Jobs of one group never run at the same time anywhere in the cluster when the queue's worker
   * uses `groupConcurrency: 1` (a router id for forward jobs).
   */
  group?: string;
  /** Run no earlier than this. */
  startAfter?: Date;
  /** Retries of this job, instead of its queue's (a configuration backup gives up sooner than a forward). */
  retryLimit?: number;
  /** The ordering key of a `key_strict_fifo` queue (required there), else the singleton key. */
  singletonKey?: string;
  /** Higher first: a queue's workers take due jobs by priority, then age (pg-boss `priority`). */
  priority?: number;
  /**
   * Insert through this executor instead of the engine's own connection: the job commits or rolls
   * back with the caller's transaction (`db.transaction`).
   */
  executor?: Query;
}

export interface EngineJob<T> {
  id: string;
  queue: string;
  data: T;
  singletonKey: string | null;
  /** 0 on the first attempt. */
  retryCount: number;
  groupId: string | null;
  /** On a dead-letter queue: the queue and id of the job that failed for good. */
  sourceName: string | null;
  sourceId: string | null;
  /** Aborted when the engine stops while the handler runs. */
  signal: AbortSignal;
}

export interface JobWorkOptions {
  /** Jobs of one group running at once across every process (1: strictly one at a time). */
  groupConcurrency?: number;
  /** Handlers of this queue running at once in this process (times `batchSize`). */
  localConcurrency?: number;
  /**
   * Jobs one fetch takes (1 by default), their handlers run at once; the fetch comes back for more
   * only when the whole batch has settled. Many workers of one job each poll and each answer every
   * notification, so a wide lane is cheaper as fewer workers taking batches.
   */
  batchSize?: number;
  /**
   * Jobs of one group running at once in this process, counted in memory and exactly (a job
   * fetched past it is put back at once); cannot be combined with `groupConcurrency`.
   */
  localGroupConcurrency?: number;
  /** Poll period when no notification wakes the worker (pg-boss minimum 0.5). */
  pollingIntervalSeconds?: number;
  /** Only jobs of at least this priority: a lane of workers that bulk work cannot occupy. */
  minPriority?: number;
  /** Errors that retrying cannot fix: the job goes straight to the dead-letter queue. */
  isPermanent?: (error: unknown) => boolean;
  /** The text kept on a failed job (never a secret); `name: message` by default. */
  describeError?: (error: unknown) => string;
  /** Called after every attempt, whatever its outcome (metrics, a relay refresh). */
  onSettled?: (job: EngineJob<unknown>, outcome: TJobOutcome, durationMs: number) => void;
}

export type TJobOutcome = "completed" | "failed" | "deadletter";

const describeErrorDefault = (error: unknown): string =>
  error instanceof Error ? `${error.name}: ${error.message}` : String(error);

export type JobHandler<T> = (job: EngineJob<T>) => Promise<unknown>;

export interface JobScheduleOptions {
  /** Time zone of the cron expression; UTC when unset. */
  tz?: string;
  /** Several schedules on one queue need distinct keys. */
  key?: string;
}

export interface JobEngineOptions {
  /** pg-boss pool size on PostgreSQL (PGlite has one connection). */
  poolMax?: number;
  /** How often expired attempts are failed over and queue counts refreshed (seconds, >= 1). */
  monitorIntervalSeconds?: number;
  /** Whether this process evaluates cron schedules (at most one job per slot cluster-wide either way). */
  schedule?: boolean;
  /** Whether this process runs pg-boss maintenance and monitoring (expiry of dead attempts, retention). */
  supervise?: boolean;
  /** This process in pg-boss's instance registry (`npm run admin -- status`), e.g. `api`. */
  instanceName?: string;
  onError?: (error: unknown) => void;
}

export interface JobEngine {
  /** The engine's pg-boss, for the admin CLI and metrics; apps use the methods below. */
  readonly boss: PgBoss;
  /**
   * Creates the queue (and its dead-letter queue) or updates its options; `createOnly` leaves an
   * existing queue as it is (a process that only sends to a queue another app owns).
   */
  defineQueue(definition: JobQueueDefinition, options?: { createOnly?: boolean }): Promise<void>;
  send<T extends object>(queue: string, data: T, options?: JobSendOptions): Promise<string | null>;
  /**
   * Queues several jobs in one statement (pg-boss `insert`, the statement `send` runs for one);
   * with `executor`, in the caller's transaction. Only `singletonKey` and `priority` per job.
   */
  sendMany<T extends object>(
    queue: string,
    jobs: ReadonlyArray<{ data: T } & Pick<JobSendOptions, "singletonKey" | "priority">>,
    options?: Pick<JobSendOptions, "executor">,
  ): Promise<void>;
  /**
   * Registers a handler; a thrown error fails the attempt (retried per the queue, then
   * dead-lettered); a plain object it returns is stored as the job's output.
   */
  work<T>(queue: string, options: JobWorkOptions, handler: JobHandler<T>): Promise<string>;
  /** Stops this process's workers of a queue, waiting for running handlers. */
  offWork(queue: string): Promise<void>;
  /** Cluster-wide cron: one job per slot however many processes schedule it. */
  schedule(queue: string, cron: string, data?: object, options?: JobScheduleOptions): Promise<void>;
  /** Jobs of a queue by id or data containment; `queued: true` only those not started yet. */
  findJobs<T>(
    queue: string,
    options?: { id?: string; key?: string; data?: object; queued?: boolean },
  ): Promise<JobWithMetadata<T>[]>;
  /** Drops this holder's reference; the last one stops pg-boss (running handlers finish first). */
  stop(): Promise<void>;
}

interface Shared {
  boss: PgBoss;
  refs: number;
  handlers: Set<string>;
}

const registry = new WeakMap<Database, Promise<Shared>>();
const NO_JOB = "00000000-0000-0000-0000-000000000000";

interface PgliteConnection {
  getNativeClient(): Promise<PGliteLike>;
}

/** pg-boss validates every key it is given, so unset options must be absent, not undefined. */
const defined = <T extends Record<string, unknown>>(value: T): Partial<T> =>
  Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;

/** A caller's transaction as a pg-boss `db`: `$1..$n` parameters, one connection. */
export const executorDb = (query: Query): Db => ({
  executeSql: async (text: string, values?: unknown[]) => ({ rows: await query(text, values ?? []) }),
});

const createBoss = async (db: Database, options: JobEngineOptions): Promise<PgBoss> => {
  const common = {
    schedule: options.schedule ?? true,
    supervise: options.supervise ?? true,
    ...(options.instanceName === undefined ? {} : { instanceName: options.instanceName }),
    monitorIntervalSeconds: options.monitorIntervalSeconds ?? 15,
    superviseIntervalSeconds: Math.min(60, options.monitorIntervalSeconds ?? 15),
    useListenNotify: true,
  };
  if (db.driver === "pglite") {
    const connection = db.orm.em.getConnection() as unknown as PgliteConnection;
    const pglite = await connection.getNativeClient();
    return new PgBoss({ ...common, backend: "pglite", db: fromPglite(pglite) });
  }
  return new PgBoss({
    ...common,
    connectionString: String(db.orm.config.get("clientUrl")),
    max: options.poolMax ?? 3,
    application_name: "fleet-jobs",
  });
};

/** Runs one job's handler and turns the outcome into pg-boss's per-job result. */
export const runJob = async <T>(
  job: Job<T>,
  handler: JobHandler<T>,
  options: Pick<JobWorkOptions, "isPermanent" | "onSettled">,
  describe: (error: unknown) => string = describeErrorDefault,
): Promise<JobResult> => {
  const view: EngineJob<T> = {
    id: job.id,
    queue: job.name,
    data: job.data,
    singletonKey: (job as Partial<JobWithMetadata<T>>).singletonKey ?? null,
    retryCount: job.retryCount,
    groupId: job.groupId ?? null,
    sourceName: (job as Partial<JobWithMetadata<T>>).sourceName ?? null,
    sourceId: (job as Partial<JobWithMetadata<T>>).sourceId ?? null,
    signal: job.signal,
  };
  const started = performance.now();
  let result: JobResult;
  try {
    // docs/operations.md "Tracing": one span per job attempt.
    const output = await inSpan(
      `job ${job.name}`,
      { "messaging.system": "pg-boss", "messaging.destination.name": job.name, "messaging.message.id": job.id },
      () => Promise.resolve(handler(view)),
      SpanKind.CONSUMER,
    );
    // A plain object a handler returns is kept on the job (pg-boss `output`).
    result =
      output !== null && typeof output === "object" && !Array.isArray(output)
        ? { id: job.id, status: "completed", output }
        : { id: job.id, status: "completed" };
  } catch (error) {
    const status = options.isPermanent?.(error) ? "deadletter" : "failed";
    result = { id: job.id, status, output: { message: describe(error) } };
  }
  const ms = performance.now() - started;
  recordJob(job.name, result.status as TJobOutcome, ms);
  options.onSettled?.(view as EngineJob<unknown>, result.status as TJobOutcome, ms);
  return result;
};

/**
 * The process's job engine on `db`: the first call starts pg-boss (migrating its schema), later
 * calls share it, so the all-in-one's apps run one pg-boss. Options of the first call win.
 */
export const acquireJobEngine = async (db: Database, options: JobEngineOptions = {}): Promise<JobEngine> => {
  let shared = registry.get(db);
  if (!shared) {
    shared = (async () => {
      const boss = await createBoss(db, options);
      boss.on("error", (error) => options.onError?.(error));
      await boss.start();
      watchEngine(boss, db);
      return { boss, refs: 0, handlers: new Set<string>() };
    })();
    registry.set(db, shared);
    shared.catch(() => registry.delete(db));
  }
  const entry = await shared;
  entry.refs += 1;
  const { boss } = entry;
  const mine = new Set<string>();
  let stopped = false;

  return {
    boss,
    defineQueue: async (definition, defineOptions = {}) => {
      if (definition.deadLetter && !(await boss.getQueue(definition.deadLetter))) {
        await boss.createQueue(
          definition.deadLetter,
          defined({ deleteAfterSeconds: definition.deleteAfterSeconds, retentionSeconds: definition.retentionSeconds }),
        );
      }
      const queueOptions = defined({
        retryLimit: definition.retryLimit,
        retryDelay: definition.retryDelaySeconds,
        retryBackoff: definition.retryBackoff,
        expireInSeconds: definition.expireInSeconds,
        deleteAfterSeconds: definition.deleteAfterSeconds,
        retentionSeconds: definition.retentionSeconds,
      });
      if (await boss.getQueue(definition.name)) {
        if (!defineOptions.createOnly)
          await boss.updateQueue(definition.name, { ...queueOptions, deadLetter: definition.deadLetter ?? null });
      } else {
        await boss.createQueue(definition.name, {
          ...queueOptions,
          ...defined({
            retryDelayMax: definition.retryDelayMaxSeconds,
            deadLetter: definition.deadLetter,
            policy: definition.policy,
          }),
          notify: true,
        });
      }
      // pg-boss looks a queue up on its own connection the first time it is used. On PGlite a send
      // inside the caller's transaction would wait for that connection forever (one connection,
      // held by the transaction), so every process looks its queues up here, before any send.
      await boss.findJobs(definition.name, { id: NO_JOB });
    },
    send: (queue, data, sendOptions = {}) =>
      boss.send(queue, data, {
        ...(sendOptions.group === undefined ? {} : { group: { id: sendOptions.group } }),
        ...(sendOptions.startAfter === undefined ? {} : { startAfter: sendOptions.startAfter }),
        ...(sendOptions.retryLimit === undefined ? {} : { retryLimit: sendOptions.retryLimit }),
        ...(sendOptions.singletonKey === undefined ? {} : { singletonKey: sendOptions.singletonKey }),
        ...(sendOptions.priority === undefined ? {} : { priority: sendOptions.priority }),
        ...(sendOptions.executor === undefined ? {} : { db: executorDb(sendOptions.executor) }),
      }),
    sendMany: async (queue, jobs, sendOptions = {}) => {
      if (jobs.length === 0) return;
      await boss.insert(
        queue,
        jobs.map((job) => ({
          data: job.data,
          ...(job.singletonKey === undefined ? {} : { singletonKey: job.singletonKey }),
          ...(job.priority === undefined ? {} : { priority: job.priority }),
        })),
        sendOptions.executor === undefined ? {} : { db: executorDb(sendOptions.executor) },
      );
    },
    work: async <T>(queue: string, workOptions: JobWorkOptions, handler: JobHandler<T>) => {
      mine.add(queue);
      entry.handlers.add(queue);
      const describe = workOptions.describeError ?? describeErrorDefault;
      return boss.work<T>(
        queue,
        {
          batchSize: workOptions.batchSize ?? 1,
          localConcurrency: workOptions.localConcurrency ?? 1,
          pollingIntervalSeconds: workOptions.pollingIntervalSeconds ?? 2,
          // A job held back by its busy key or group sends no new notification when that frees up,
          // so the backstop poll must stay as short as the plain one.
          notifyPollingIntervalSeconds: workOptions.pollingIntervalSeconds ?? 2,
          ...(workOptions.groupConcurrency === undefined ? {} : { groupConcurrency: workOptions.groupConcurrency }),
          ...(workOptions.minPriority === undefined ? {} : { minPriority: workOptions.minPriority }),
          ...(workOptions.localGroupConcurrency === undefined
            ? {}
            : { localGroupConcurrency: workOptions.localGroupConcurrency }),
          includeMetadata: true,
          perJobResults: true,
        },
        async (jobs) => Promise.all(jobs.map((job) => runJob(job, handler, workOptions, describe))),
      );
    },
    offWork: async (queue) => {
      mine.delete(queue);
      entry.handlers.delete(queue);
      await boss.offWork(queue, { wait: true });
    },
    schedule: (queue, cron, data, scheduleOptions = {}) =>
      boss.schedule(queue, cron, data ?? null, {
        ...(scheduleOptions.tz === undefined ? {} : { tz: scheduleOptions.tz }),
        ...(scheduleOptions.key === undefined ? {} : { key: scheduleOptions.key }),
      }),
    findJobs: <T>(queue: string, findOptions: { id?: string; key?: string; data?: object; queued?: boolean } = {}) =>
      boss.findJobs<T>(queue, { queued: false, ...findOptions }),
    stop: async () => {
      if (stopped) return;
      stopped = true;
      for (const queue of mine) {
        entry.handlers.delete(queue);
        await boss.offWork(queue, { wait: true });
      }
      entry.refs -= 1;
      if (entry.refs === 0) {
        registry.delete(db);
        unwatchEngine(boss);
        // PGlite belongs to the Database (closed with it), so pg-boss must not close the instance.
        await boss.stop({ graceful: true, close: db.driver !== "pglite", timeout: 10_000 });
      }
    },
  };
};
