import { mkdirSync } from "node:fs";
import path from "node:path";
import type { MikroORM } from "@mikro-orm/core";
import { Migrator } from "@mikro-orm/migrations";
import type { PgliteConnection } from "@mikro-orm/pglite";
import type { PostgreSqlConnection } from "@mikro-orm/postgresql";
import { type InferKyselyDB, MikroKyselyPlugin, type SqlEntityManager } from "@mikro-orm/sql";
import { inSpan, lockDataDir, SpanKind } from "@fleet/runtime";
import {
  type CompiledQuery,
  type DatabaseConnection,
  type Driver,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type QueryResult,
  type Selectable,
} from "kysely";
import pg from "pg";
import { ENTITIES } from "./entities/index.ts";
import { MIGRATIONS } from "./migrations/index.ts";
import { PROCESS_HOLDER, watchPool } from "./metrics/cluster-metrics.ts";

/** How to reach the database (docs/operations.md "Configuration": DATABASE_URL, DATA_DIR). */
export interface DatabaseConfig {
  /** `postgres://...` selects PostgreSQL; unset selects embedded PGlite. */
  databaseUrl?: string | undefined;
  /** PGlite files live here; `memory` keeps everything in memory. */
  dataDir: string;
  /**
   * Connections of the process's one pool on PostgreSQL (MikroORM, raw queries through `db.query`
   * share it; DATABASE_POOL_MAX). The job engine, LISTEN connections and the start-up migration
   * lock come on top (docs/operations.md "Configuration").
   */
  poolSize?: number;
  /** Log every SQL statement (never in production: values may be personal data). */
  debug?: boolean;
  /**
   * In-memory PGlite only: start from this dumped data directory instead of an empty cluster. Tests
   * load the migrated template (testing/migrated-template.ts): far cheaper than initdb + migrations.
   */
  loadDataDir?: Blob;
}

export type DatabaseDriver = "pglite" | "postgresql";

export interface Database {
  readonly driver: DatabaseDriver;
  readonly orm: MikroORM;
  /**
   * One statement with `$1..$n` placeholders, its values sent as bound parameters by the driver
   * (docs/contributing.md "SQL style"); `prepare` names the statement so PostgreSQL parses and
   * plans it once per connection. Its `kysely` runs typed statements on the pool.
   */
  readonly query: DatabaseQuery;
  /**
   * Runs `work` in one transaction on one connection, its statements through the `query` it is
   * given (not `db.query`, which would run outside it, and on PGlite wait for it forever);
   * rolls back when `work` throws.
   */
  transaction<T>(work: (query: Query) => Promise<T>): Promise<T>;
  /** Applies pending migrations; safe when several processes start at once. */
  migrate(): Promise<void>;
  /** True when the database answers and no migration is pending. */
  isReady(): Promise<boolean>;
  /** One round trip to the database; rejects when it does not answer (readiness probes). */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface QueryOptions {
  /** Statement name: one fixed SQL text per name. */
  prepare?: string;
}

/** The tables as the entities define them (entities/index.ts): what typed queries are checked against. */
export type Schema = InferKyselyDB<(typeof ENTITIES)[number]>;

/** A row of `table` as a select gives it back. */
export type Row<Table extends keyof Schema> = Selectable<Schema[Table]>;

/**
 * The one handle repositories take: `db.query`, or the one `db.transaction` hands out. Called, it
 * runs one statement with `$1..$n` placeholders; its `kysely` builds typed statements that run on
 * the same connection, in the same transaction (docs/contributing.md "SQL style").
 */
export interface Query {
  <T = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<T[]>;
  readonly kysely: Kysely<Schema>;
}

/** `db.query`: a {@link Query} that can also name its statement. */
export interface DatabaseQuery {
  <T = Record<string, unknown>>(sql: string, params?: readonly unknown[], options?: QueryOptions): Promise<T[]>;
  readonly kysely: Kysely<Schema>;
}

/** `db.query` as a {@link Query}, for a repository that runs outside a transaction. */
export const queryOf = (db: Pick<Database, "query">): Query =>
  withKysely(
    <T>(sql: string, params?: readonly unknown[]) => db.query<T>(sql, params),
    () => db.query.kysely,
  );

/** Attaches the typed builder, made on first use: a handle that only runs raw SQL never builds one. */
const withKysely = <F extends (...args: never[]) => Promise<unknown[]>>(
  query: F,
  make: () => Kysely<Schema>,
): F & { readonly kysely: Kysely<Schema> } => {
  let kysely: Kysely<Schema> | undefined;
  return Object.defineProperty(query, "kysely", { get: () => (kysely ??= make()) }) as F & {
    readonly kysely: Kysely<Schema>;
  };
};

/** One statement on a connection: its rows and, for writes, how many rows it touched (pg, PGlite). */
type Run = (
  sql: string,
  params: unknown[],
) => Promise<{ rows: unknown[]; rowCount?: number | null; affectedRows?: number | undefined }>;
type RawQuery = (sql: string, params: unknown[], options?: QueryOptions) => Promise<unknown[]>;
type RawTransaction = <T>(work: (run: Run) => Promise<T>) => Promise<T>;
interface PgliteLike {
  query(sql: string, params?: unknown[]): Promise<{ rows: unknown[]; affectedRows?: number }>;
  transaction<T>(
    work: (tx: {
      query(sql: string, params?: unknown[]): Promise<{ rows: unknown[]; affectedRows?: number }>;
    }) => Promise<T>,
  ): Promise<T>;
}

/**
 * Kysely over one of our runners rather than its own pool: its statements take the connection (and
 * the transaction) of the handle, and MikroORM's plugin converts values as the entities declare them
 * (timestamps come back as `Date`, the drivers here hand them over as text).
 */
const kyselyOver = (run: Run, plugin: MikroKyselyPlugin): Kysely<Schema> => {
  const connection: DatabaseConnection = {
    executeQuery: async <R>(compiled: CompiledQuery): Promise<QueryResult<R>> => {
      const { rows, rowCount, affectedRows } = await run(compiled.sql, [...compiled.parameters]);
      const touched = rowCount ?? affectedRows;
      return touched == null ? { rows: rows as R[] } : { rows: rows as R[], numAffectedRows: BigInt(touched) };
    },
    streamQuery: () => {
      throw new Error("streaming is not supported");
    },
  };
  const refuse = async () => {
    throw new Error("transactions are opened by db.transaction, not by Kysely");
  };
  const driver: Driver = {
    init: async () => {},
    acquireConnection: async () => connection,
    beginTransaction: refuse,
    commitTransaction: refuse,
    rollbackTransaction: refuse,
    releaseConnection: async () => {},
    destroy: async () => {},
  };
  return new Kysely<Schema>({
    dialect: {
      createAdapter: () => new PostgresAdapter(),
      createDriver: () => driver,
      createIntrospector: (db) => new PostgresIntrospector(db),
      createQueryCompiler: () => new PostgresQueryCompiler(),
    },
    plugins: [plugin],
  });
};

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
  const { pg_trgm } = await import("@electric-sql/pglite/contrib/pg_trgm");
  const inMemory = config.dataDir === "memory";
  const loadDataDir = config.loadDataDir;
  let dataDir = "memory://";
  let unlock = () => {};
  if (!inMemory) {
    dataDir = path.resolve(config.dataDir, "pglite");
    mkdirSync(dataDir, { recursive: true });
    // One process per embedded database: a second one gets one clear line (@fleet/runtime data-dir-lock.ts).
    unlock = lockDataDir(path.resolve(config.dataDir));
  }
  let orm: MikroORM;
  try {
    orm = await PgliteMikroORM.init({
      ...commonOptions(config),
      dbName: dataDir,
      // A function, so MikroORM's deep copy of its options leaves the Blob intact (a copied Blob is unreadable).
      // pg_trgm: the fleet list's search index (migration 180).
      driverOptions: () => ({ extensions: { pg_trgm }, ...(inMemory && loadDataDir ? { loadDataDir } : {}) }),
    });
  } catch (error) {
    unlock();
    throw error;
  }
  const pglite: PgliteLike = await (orm.em.getConnection() as PgliteConnection).getNativeClient();
  const run: Run = (sql, params) => pglite.query(sql, params);
  const raw: RawQuery = async (sql, params) => (await pglite.query(sql, params)).rows;
  // PGlite runs one statement at a time on its one connection; its transaction() holds that lock.
  const transaction: RawTransaction = (work) =>
    pglite.transaction((tx) => work((sql, params) => tx.query(sql, params)));
  return wrap(
    "pglite",
    orm,
    run,
    raw,
    transaction,
    async () => {
      await orm.migrator.up();
    },
    undefined,
    unlock,
  );
};

/**
 * How long an idle pooled connection is kept (pg's default is 10 s). Work at the 30 s heartbeat
 * cadence, a change's waves among it, would otherwise find most of its connections closed each time
 * and pay a new backend (fork, authentication, cold catalog caches, prepared statements lost) per
 * connection per burst (docs/scale.md "The model").
 */
export const POOL_IDLE_MS = 60_000;

const openPostgres = async (config: DatabaseConfig, databaseUrl: string): Promise<Database> => {
  const { MikroORM: PostgresMikroORM } = await import("@mikro-orm/postgresql");
  const orm = await PostgresMikroORM.init({
    ...commonOptions(config),
    clientUrl: databaseUrl,
    pool: { min: 0, max: config.poolSize ?? 10, idleTimeoutMillis: POOL_IDLE_MS },
  });
  // Hot-path reads skip the ORM but not its pool: one pool per process (docs/operations.md
  // "Configuration": DATABASE_POOL_MAX), the driver's own `pg.Pool` under MikroORM.
  const pool = await nativePool(orm);
  const unwatchPool = watchPool(() => ({
    total: pool.totalCount,
    idle: pool.idleCount,
    waiting: pool.waitingCount,
    max: config.poolSize ?? 10,
  }));
  const run: Run = (sql, params) => pool.query({ text: sql, values: params });
  const raw: RawQuery = async (sql, params, options) =>
    (
      await pool.query(
        options?.prepare ? { name: options.prepare, text: sql, values: params } : { text: sql, values: params },
      )
    ).rows;
  const transaction: RawTransaction = async (work) => {
    const client = await pool.connect();
    const run: Run = (sql, params) => client.query(sql, params);
    try {
      await client.query("begin");
      const result = await work(run);
      await client.query("commit");
      client.release();
      return result;
    } catch (error) {
      try {
        await client.query("rollback");
        client.release();
      } catch (rollbackError) {
        // A connection that cannot even roll back is broken: the pool must not hand it out again.
        client.release(rollbackError as Error);
      }
      throw error;
    }
  };
  const migrateWithLock = async () => {
    // A session-level advisory lock on a dedicated connection: the migrator uses the ORM's pool,
    // so the lock must live on a connection it never touches.
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      await client.query("select pg_advisory_lock($1)", [MIGRATION_LOCK_KEY]);
      await orm.migrator.up();
    } finally {
      await client.query("select pg_advisory_unlock($1)", [MIGRATION_LOCK_KEY]).catch(() => {});
      await client.end();
    }
  };
  // The pool is MikroORM's own: closing the ORM ends it.
  return wrap("postgresql", orm, run, raw, transaction, migrateWithLock, async () => unwatchPool());
};

interface PgClientLike {
  query(sql: string, params?: unknown[]): Promise<{ rows: unknown[]; rowCount: number | null }>;
  release(error?: Error): void;
}

interface NativePgPool {
  readonly totalCount: number;
  readonly idleCount: number;
  readonly waitingCount: number;
  query(config: {
    name?: string;
    text: string;
    values: unknown[];
  }): Promise<{ rows: unknown[]; rowCount: number | null }>;
  connect(): Promise<PgClientLike>;
}

const nativePool = (orm: MikroORM): Promise<NativePgPool> =>
  (orm.em.getConnection() as PostgreSqlConnection).getNativeClient();

const wrap = (
  driver: DatabaseDriver,
  orm: MikroORM,
  /** Statements of the typed builder outside a transaction (each gets its span, like `query`). */
  run: Run,
  raw: RawQuery,
  transaction: RawTransaction,
  migrate: () => Promise<void>,
  closeRaw: () => Promise<void> = async () => {},
  /** Runs once the ORM is closed (releases the embedded database's DATA_DIR lock). */
  afterClose: () => void = () => {},
): Database => {
  let closed = false;
  // Metadata and platform only: the plugin never runs a statement through this fork.
  const plugin = new MikroKyselyPlugin(orm.em.fork() as SqlEntityManager, { convertValues: true });
  const spanned = <R>(name: string, sql: string, work: () => Promise<R>) =>
    inSpan(
      name,
      { "db.system.name": driver, "db.query.text": sql.length > 2000 ? sql.slice(0, 2000) : sql },
      work,
      SpanKind.CLIENT,
    );
  const typedRun: Run = (sql, params) => {
    if (closed) return Promise.reject(new Error("database is closed"));
    return spanned("db.query", sql, () => run(sql, params));
  };
  // docs/operations.md "Tracing": a span per statement, with its text (never its values).
  const query = withKysely(
    <T>(sql: string, params: readonly unknown[] = [], options?: QueryOptions): Promise<T[]> => {
      if (closed) return Promise.reject(new Error("database is closed"));
      return spanned<T[]>(options?.prepare ?? "db.query", sql, () => raw(sql, [...params], options) as Promise<T[]>);
    },
    () => kyselyOver(typedRun, plugin),
  );
  const handleOf = (tx: Run): Query =>
    withKysely(
      async <T>(sql: string, params: readonly unknown[] = []) => (await tx(sql, [...params])).rows as T[],
      () => kyselyOver(tx, plugin),
    );
  return {
    driver,
    orm,
    query,
    transaction: (work) => {
      if (closed) return Promise.reject(new Error("database is closed"));
      return inSpan(
        "db.transaction",
        { "db.system.name": driver },
        () => transaction((tx) => work(handleOf(tx))),
        SpanKind.CLIENT,
      );
    },
    migrate,
    ping: async () => {
      if (closed) throw new Error("database is closed");
      await raw("select 1", []);
    },
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
      // Hand cluster-wide duties (metrics leases) over at once rather than when they expire.
      await raw("delete from cluster_leases where holder = $1", [PROCESS_HOLDER]).catch(() => {});
      closed = true;
      await closeRaw();
      await orm.close(true);
      afterClose();
    },
  };
};
