import pg from "pg";
import { type Database, openDatabase } from "../database.ts";

export interface TestDatabase extends Database {
  /** The URL of the private PostgreSQL database, or undefined on PGlite. */
  readonly url: string | undefined;
}

/**
 * A migrated, empty database private to the caller. With `DATABASE_URL` set (CI's second run) it is
 * a fresh PostgreSQL database created from that server and dropped on close; otherwise in-memory
 * PGlite. Test files run in parallel, so nothing is ever shared between them.
 */
export const createTestDatabase = async (options: { migrateTo?: string } = {}): Promise<TestDatabase> => {
  const baseUrl = process.env.DATABASE_URL;
  // `migrateTo`: stop after that migration, so a test can seed old data and then run the rest.
  const migrate = (db: Database) =>
    options.migrateTo === undefined
      ? db.migrate()
      : db.orm.migrator.up({ to: options.migrateTo }).then(() => undefined);
  if (!baseUrl) {
    const db = await openDatabase({ dataDir: "memory" });
    await migrate(db);
    return Object.assign(db, { url: undefined });
  }
  const name = `t_${Date.now().toString(36)}_${crypto.randomUUID().slice(0, 8)}`;
  const admin = new pg.Client({ connectionString: baseUrl });
  await admin.connect();
  try {
    await admin.query(`create database "${name}"`);
  } finally {
    await admin.end();
  }
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  const db = await openDatabase({ databaseUrl: url.toString(), dataDir: "memory", poolSize: 5 });
  await migrate(db);
  const close = db.close;
  return Object.assign(db, {
    url: url.toString(),
    close: async () => {
      await close();
      const dropper = new pg.Client({ connectionString: baseUrl });
      await dropper.connect();
      try {
        await dropper.query(`drop database if exists "${name}" with (force)`);
      } finally {
        await dropper.end();
      }
    },
  });
};

/** A digest of every application row: proves "nothing changed", not just "same count". */
export const databaseFingerprint = async (db: Database): Promise<string> => {
  const tables = await db.query<{ tablename: string }>(
    // Request counters are bookkeeping of every request, refused ones included, not application state.
    `select tablename from pg_tables where schemaname = 'public' and tablename not in ('mikro_orm_migrations', 'rate_limit_counters') order by tablename`,
  );
  const parts: string[] = [];
  for (const { tablename } of tables) {
    const rows = await db.query<{ d: string | null }>(
      `select md5(coalesce(string_agg(t::text, '|' order by t::text), '')) as d from "${tablename}" t`,
    );
    parts.push(`${tablename}:${rows[0]?.d ?? ""}`);
  }
  return parts.join(",");
};
