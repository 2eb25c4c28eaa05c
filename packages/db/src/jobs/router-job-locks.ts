import pg from "pg";
import type { Database } from "../database.ts";

/**
 * One router job at a time per router, whatever the load (docs/architecture.md "How a forward
 * travels"). The `key_strict_fifo` queue lets only one job of a router be active in pg-boss's table,
 * but an attempt that outlives its lease (a slow router, a loaded machine) is failed over and retried
 * while its handler still runs: the retry and the stale attempt would then talk to the router at the
 * same time and interleave its NAT rules. So every attempt runs inside this lock:
 *
 * - within a process, a chain per router (the same agent can take the retry of its own stale attempt);
 * - across processes on PostgreSQL, a session advisory lock per router on one connection of the
 *   agent's own, held until the attempt ends. A process that dies drops its connection and with it
 *   its locks, so a dead agent never blocks a router. Taking it polls `pg_try_advisory_lock` (one
 *   connection serves every router of the process, so it must never block on one of them).
 *
 * PGlite lives in one process: the chain alone is the whole lock there.
 */
export interface RouterJobLocks {
  /** Runs `work` holding the router's lock; waits for it first. */
  run<T>(routerId: string, work: () => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

// Any fixed number: the namespace of router job locks among the application's advisory locks.
const LOCK_NAMESPACE = 727_274_006;
const RETRY_MS = 100;

/** In-process chains, one set per database: every agent of one process on one database shares it. */
const chainsByDb = new WeakMap<Database, Map<string, Promise<unknown>>>();

const chained = async <T>(chains: Map<string, Promise<unknown>>, key: string, work: () => Promise<T>): Promise<T> => {
  const before = chains.get(key) ?? Promise.resolve();
  let release: () => void = () => {};
  const mine = new Promise<void>((resolve) => {
    release = resolve;
  });
  const tail = before.then(() => mine);
  chains.set(key, tail);
  try {
    await before;
    return await work();
  } finally {
    release();
    if (chains.get(key) === tail) chains.delete(key);
  }
};

export const openRouterJobLocks = (db: Database, onError: (error: unknown) => void = () => {}): RouterJobLocks => {
  let chains = chainsByDb.get(db);
  if (!chains) {
    chains = new Map();
    chainsByDb.set(db, chains);
  }
  const local = chains;
  if (db.driver !== "postgresql") {
    return { run: (routerId, work) => chained(local, routerId, work), close: async () => {} };
  }
  return new PostgresRouterJobLocks(String(db.orm.config.get("clientUrl")), local, onError);
};

class PostgresRouterJobLocks implements RouterJobLocks {
  readonly #url: string;
  readonly #chains: Map<string, Promise<unknown>>;
  readonly #onError: (error: unknown) => void;
  #client: Promise<pg.Client> | undefined;
  #closed = false;

  constructor(url: string, chains: Map<string, Promise<unknown>>, onError: (error: unknown) => void) {
    this.#url = url;
    this.#chains = chains;
    this.#onError = onError;
  }

  run<T>(routerId: string, work: () => Promise<T>): Promise<T> {
    return chained(this.#chains, routerId, async () => {
      const client = await this.#lock(routerId);
      try {
        return await work();
      } finally {
        await client
          .query("select pg_advisory_unlock($1::int, hashtext($2))", [LOCK_NAMESPACE, routerId])
          .catch((error: unknown) => this.#onError(error));
      }
    });
  }

  async #lock(routerId: string): Promise<pg.Client> {
    for (;;) {
      if (this.#closed) throw new Error("router job locks closed");
      const client = await this.#connection();
      try {
        const { rows } = await client.query<{ ok: boolean }>(
          "select pg_try_advisory_lock($1::int, hashtext($2)) as ok",
          [LOCK_NAMESPACE, routerId],
        );
        if (rows[0]?.ok === true) return client;
      } catch (error) {
        // The connection broke: the next turn opens another (its locks went with it).
        this.#onError(error);
        this.#client = undefined;
      }
      await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
    }
  }

  #connection(): Promise<pg.Client> {
    if (!this.#client) {
      const opening = (async () => {
        const client = new pg.Client({ connectionString: this.#url, application_name: "fleet-router-locks" });
        client.on("error", (error) => {
          this.#onError(error);
          if (this.#client === opening) this.#client = undefined;
        });
        await client.connect();
        return client;
      })();
      opening.catch(() => {
        if (this.#client === opening) this.#client = undefined;
      });
      this.#client = opening;
    }
    return this.#client;
  }

  async close(): Promise<void> {
    this.#closed = true;
    const client = this.#client;
    this.#client = undefined;
    await client?.then((c) => c.end()).catch(() => {});
  }
}
