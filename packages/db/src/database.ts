import { mkdirSync } from "node:fs";
import path from "node:path";
import type { MikroORM } from "@mikro-orm/core";
import { Migrator } from "@mikro-orm/migrations";
import type { SqlEntityManager } from "@mikro-orm/sql";
import pg from "pg";
import { ENTITIES } from "./entities/index.ts";
import { MIGRATIONS } from "./migrations/index.ts";

/** How to reach the database (CONTRACT section 2: DATABASE_URL, DATA_DIR). */
export interface DatabaseConfig {
  /** `postgres://...` selects PostgreSQL; unset selects embedded PGlite. */
  databaseUrl?: string | undefined;
  /** PGlite files live here; `memory` keeps everything in memory. */
  dataDir: string;
  /** Pool size for PostgreSQL. */
  poolSize?: number;
  /** Log every SQL statement (never in production: values may be personal data). */
  debug?: boolean;
}

export type DatabaseDriver = "pglite" | "postgresql";

export interface Database {
  readonly driver: DatabaseDriver;
  readonly orm: MikroORM;
  /** A fresh EntityManager fork: one per request, job or tick, never the global one. */
  em(): SqlEntityManager;
  /** Raw SQL on the shared pool/instance, for hot paths where the unit of work is dead weight. */
  query<T = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<T[]>;
  /** Applies pending migrations; safe when several processes start at once. */
  migrate(): Promise<void>;
  /** True when the database answers and no migration is pending. */
  isReady(): Promise<boolean>;
  close(): Promise<void>;
}

const MIGRATIONS_TABLE = "mikro_orm_migrations";
// Any fixed 64-bit number: processes starting together serialize their migrations on it.
const MIGRATION_LOCK_KEY = 727_274_001;

const commonOptions = (config: DatabaseConfig) => ({
  entities: ENTITIES,
  extensions: [Migrator],
  debug: config.debug ?? false,
  allowGlobalContext: false,
  // Entities are defined with defineEntity; no reflection, no folder discovery.
  discovery: { warnWhenNoEntities: true },
  migrations: {
    tableName: MIGRATIONS_TABLE,
    migrationsList: MIGRATIONS,
    snapshot: false,
    transactional: true,
    allOrNothing: true,
    silent: true,
  },
});

export const openDatabase = async (config: DatabaseConfig): Promise<Database> => {
  if (config.databaseUrl) return openPostgres(config, config.databaseUrl);
  return openPglite(config);
};

const openPglite = async (config: DatabaseConfig): Promise<Database> => {
  const { MikroORM: PgliteMikroORM } = await import("@mikro-orm/pglite");
  const inMemory = config.dataDir === "memory";
  let dataDir = "memory://";
  if (!inMemory) {
    dataDir = path.resolve(config.dataDir, "pglite");
    mkdirSync(dataDir, { recursive: true });
  }
  const orm = await PgliteMikroORM.init({
    ...commonOptions(config),
    dbName: dataDir,
  });
  return wrap("pglite", orm, async () => {
    await orm.migrator.up();
  });
};

const openPostgres = async (config: DatabaseConfig, databaseUrl: string): Promise<Database> => {
  const { MikroORM: PostgresMikroORM } = await import("@mikro-orm/postgresql");
  const orm = await PostgresMikroORM.init({
    ...commonOptions(config),
    clientUrl: databaseUrl,
    pool: { min: 0, max: config.poolSize ?? 10 },
  });
  return wrap("postgresql", orm, async () => {
    // A session-level advisory lock on a dedicated connection: the migrator uses the pool, so
    // the lock must live on a connection it never touches.
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      await client.query("select pg_advisory_lock($1)", [MIGRATION_LOCK_KEY]);
      await orm.migrator.up();
    } finally {
      await client.query("select pg_advisory_unlock($1)", [MIGRATION_LOCK_KEY]).catch(() => {});
      await client.end();
    }
  });
};

const wrap = (driver: DatabaseDriver, orm: MikroORM, migrate: () => Promise<void>): Database => {
  const em = () => orm.em.fork() as SqlEntityManager;
  const connection = () => (orm.em as SqlEntityManager).getConnection();
  let closed = false;
  return {
    driver,
    orm,
    em,
    query: async <T>(sql: string, params: readonly unknown[] = []) =>
      (await connection().execute(sql, [...params], "all")) as T[],
    migrate,
    isReady: async () => {
      if (closed) return false;
      try {
        const pending = await orm.migrator.getPending();
        return pending.length === 0;
      } catch {
        return false;
      }
    },
    close: async () => {
      if (closed) return;
      closed = true;
      await orm.close(true);
    },
  };
};
