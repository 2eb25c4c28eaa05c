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

interface LockRequest {
  routerId: string;
  done: (client: pg.Client | undefined) => void;
}

class PostgresRouterJobLocks implements RouterJobLocks {
  readonly #url: string;
  readonly #chains: Map<string, Promise<unknown>>;
  readonly #onError: (error: unknown) => void;
  #client: Promise<pg.Client> | undefined;
  #closed = false;
  /** Tries and releases waiting for the connection's next statement: one statement each for all of them. */
  #toLock: LockRequest[] = [];
  #toUnlock: Array<{ routerId: string; client: pg.Client; done: () => void }> = [];
  #flushing = false;

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
        await new Promise<void>((done) => {
          this.#toUnlock.push({ routerId, client, done });
          this.#flush();
        });
      }
    });
  }

  async #lock(routerId: string): Promise<pg.Client> {
    for (;;) {
      if (this.#closed) throw new Error("router job locks closed");
      const client = await new Promise<pg.Client | undefined>((done) => {
        this.#toLock.push({ routerId, done });
        this.#flush();
      });
      if (client) return client;
      await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
    }
  }

  /**
   * Sends what waits, one statement per kind for every router: a wave of change steps takes its 50
   * locks in one round trip rather than 50 in a row on the one connection (issue 39). Releases go
   * first, so a waiting try can take what was just freed.
   */
  #flush(): void {
    if (this.#flushing) return;
    this.#flushing = true;
    // Started on the next turn of the loop: what arrives in this one goes in the same statement.
    setImmediate(async () => {
      try {
        while (this.#toUnlock.length > 0 || this.#toLock.length > 0) {
          const unlocks = this.#toUnlock.splice(0);
          // A lock lives on the connection that took it (a broken one took its locks with it).
          for (const client of new Set(unlocks.map((u) => u.client))) {
            const ids = unlocks.filter((u) => u.client === client).map((u) => u.routerId);
            await client
              .query("select pg_advisory_unlock($1::int, hashtext(k)) from unnest($2::text[]) as k", [
                LOCK_NAMESPACE,
                ids,
              ])
              .catch((error: unknown) => this.#onError(error));
          }
          for (const u of unlocks) u.done();
          const tries = this.#toLock.splice(0);
          if (tries.length === 0) continue;
          let taken = new Set<string>();
          let client: pg.Client | undefined;
          try {
            client = await this.#connection();
            const { rows } = await client.query<{ k: string; ok: boolean }>(
              "select k, pg_try_advisory_lock($1::int, hashtext(k)) as ok from unnest($2::text[]) as k",
              [LOCK_NAMESPACE, tries.map((t) => t.routerId)],
            );
            taken = new Set(rows.filter((r) => r.ok === true).map((r) => r.k));
          } catch (error) {
            // The connection broke: the next turn opens another (its locks went with it).
            this.#onError(error);
            this.#client = undefined;
          }
          for (const t of tries) t.done(client && taken.has(t.routerId) ? client : undefined);
        }
      } finally {
        this.#flushing = false;
      }
    });
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
