import { acquireJobEngine, type Database, type DeliveryEnqueuer, type JobEngine } from "@fleet/db";
import type { Logger } from "pino";

/** A queue worker started on the engine (webhook deliveries, notification deliveries). */
export interface EngineWorker {
  start(engine: JobEngine): Promise<void>;
  close(): Promise<void>;
}

/**
 * The job engine for webhook deliveries, started on first need: when this process queues a
 * delivery, or finds an enabled webhook in the database (deliveries queued by other processes).
 * pg-boss migrates its schema and polls on start; an instance whose organizations have no
 * webhooks never pays for it.
 */
export class DeliveryRuntime {
  readonly #db: Database;
  readonly #worker: EngineWorker;
  readonly #logger: Logger;
  #engine: Promise<JobEngine> | undefined;
  #closed = false;

  /** The worker starts on the engine once it runs (retries are the queue's, not the worker's). */
  constructor(db: Database, worker: EngineWorker, logger: Logger) {
    this.#db = db;
    this.#logger = logger;
    this.#worker = worker;
  }

  get started(): boolean {
    return this.#engine !== undefined;
  }

  ensure(): Promise<JobEngine> {
    if (this.#closed) return Promise.reject(new Error("the delivery runtime is closed"));
    this.#engine ??= (async () => {
      const engine = await acquireJobEngine(this.#db, {
        onError: (error) => this.#logger.warn({ err: error }, "job engine error"),
      });
      await this.#worker.start(engine);
      return engine;
    })().catch((error) => {
      this.#engine = undefined;
      throw error;
    });
    return this.#engine;
  }

  /** Sends through the engine, starting it if needed (inside the caller's transaction). */
  readonly enqueuer: DeliveryEnqueuer = {
    send: async (queue, data, options) => (await this.ensure()).send(queue, data, options),
    ready: () => this.ensure(),
  };

  async close(): Promise<void> {
    this.#closed = true;
    const engine = await this.#engine?.catch(() => undefined);
    if (!engine) return;
    await this.#worker.close();
    await engine.stop();
  }
}
