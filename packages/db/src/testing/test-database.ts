import { type Database, openDatabase } from "../database.ts";
import { databaseUrlFor, pgliteTemplate, postgresTemplate, runOn } from "./migrated-template.ts";

export interface TestDatabase extends Database {
  /** The URL of the private PostgreSQL database, or undefined on PGlite. */
  readonly url: string | undefined;
}

/**
 * A migrated, empty database private to the caller. With `DATABASE_URL` set (CI's second run) it is
 * a fresh PostgreSQL database created from that server and dropped on close; otherwise in-memory
 * PGlite. Test files run in parallel, so nothing is ever shared between them. Inside a test run it
 * is a copy of the run's migrated template (migrated-template.ts), not migrated on its own.
 */
export const createTestDatabase = async (options: { migrateTo?: string } = {}): Promise<TestDatabase> => {
  // `migrateTo`: stop after that migration, so a test can seed old data and then run the rest;
  // the template is fully migrated, so such a database starts empty.
  const partial = options.migrateTo !== undefined;
  const migrate = (db: Database) =>
    options.migrateTo === undefined
      ? db.migrate()
      : db.orm.migrator.up({ to: options.migrateTo }).then(() => undefined);
  const baseUrl = process.env.DATABASE_URL;
  if (!baseUrl) {
    const template = partial ? undefined : await pgliteTemplate();
    const db = await openDatabase({ dataDir: "memory", ...(template ? { loadDataDir: template } : {}) });
    await migrateUnlessCurrent(db, template !== undefined, migrate);
    return Object.assign(db, { url: undefined });
  }
  const template = partial ? undefined : postgresTemplate();
  const created = await createPostgresDatabase(baseUrl, template);
  const db = await openDatabase({ databaseUrl: created.url, dataDir: "memory", poolSize: 5 });
  await migrateUnlessCurrent(db, template !== undefined, migrate);
  const close = db.close;
  return Object.assign(db, {
    url: created.url,
    close: async () => {
      await close();
      await created.drop();
    },
  });
};

// A template made before a migration was added (a long `vitest --watch`) catches up here.
const migrateUnlessCurrent = async (db: Database, copied: boolean, migrate: (db: Database) => Promise<void>) => {
  if (!copied || !(await db.isReady())) await migrate(db);
};

/**
 * An empty, unmigrated PostgreSQL database private to the caller, for a test that starts the
 * system as a process (which migrates by itself): its URL and a `drop`. Undefined without
 * `DATABASE_URL` (the process then uses its embedded PGlite). CI's PostgreSQL server outlives
 * runs, so a test that needs a fresh install must never use the shared database itself.
 */
export const createEmptyPostgresDatabase = async (): Promise<
  { url: string; drop: () => Promise<void> } | undefined
> => {
  const baseUrl = process.env.DATABASE_URL;
  if (!baseUrl) return undefined;
  return createPostgresDatabase(baseUrl, undefined);
};

const createPostgresDatabase = async (
  baseUrl: string,
  template: string | undefined,
): Promise<{ url: string; drop: () => Promise<void> }> => {
  const name = `t_${Date.now().toString(36)}_${crypto.randomUUID().slice(0, 8)}`;
  await runOn(baseUrl, `create database "${name}"${template ? ` template "${template}"` : ""}`);
  return {
    url: databaseUrlFor(baseUrl, name),
    drop: () => runOn(baseUrl, `drop database if exists "${name}" with (force)`),
  };
};

/**
 * Columns that record use, not state: an API key's `last_used_at` is written (deferred, batched)
 * when a request authenticates with it, refused requests included, like the request counters.
 */
const USE_BOOKKEEPING: Record<string, string[]> = { api_keys: ["last_used_at"] };

/** Sessions of this database waiting for a lock (PostgreSQL: tests that interleave two transactions). */
export const lockWaiters = async (db: Pick<Database, "query">): Promise<number> =>
  (
    await db.query<{ n: number }>(
      "select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'",
    )
  )[0]?.n ?? 0;

/** A digest of every application row: proves "nothing changed", not just "same count". */
export const databaseFingerprint = async (db: Database): Promise<string> => {
  const tables = await db.query<{ tablename: string }>(
    // Request counters are bookkeeping of every request, refused ones included, not application state.
    `select tablename from pg_tables where schemaname = 'public' and tablename not in ('mikro_orm_migrations', 'rate_limit_counters') order by tablename`,
  );
  const parts: string[] = [];
  for (const { tablename } of tables) {
    const row = `(to_jsonb(t) - $1::text[])::text`;
    const rows = await db.query<{ d: string | null }>(
      `select md5(coalesce(string_agg(${row}, '|' order by ${row}), '')) as d from "${tablename}" t`,
      [USE_BOOKKEEPING[tablename] ?? []],
    );
    parts.push(`${tablename}:${rows[0]?.d ?? ""}`);
  }
  return parts.join(",");
};
