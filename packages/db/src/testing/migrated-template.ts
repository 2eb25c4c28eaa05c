import { execFileSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { openDatabase } from "../database.ts";

/**
 * A migrated, empty database made once per test run (vitest's globalSetup), which every
 * `createTestDatabase()` of the run copies instead of migrating its own: an empty PGlite cluster
 * costs an initdb plus ~30 migrations, loading a dumped one a fraction of that; on PostgreSQL
 * `create database ... template` copies files instead of replaying migrations. The run's workers
 * find it through these variables (set before they start); without them (a bench, a script)
 * `createTestDatabase()` migrates as before.
 */
const PGLITE_TEMPLATE = "FLEET_TEST_PGLITE_TEMPLATE";
const POSTGRES_TEMPLATE = "FLEET_TEST_POSTGRES_TEMPLATE";

/** Makes the run's template and returns its removal. */
export const prepareMigratedTemplate = async (): Promise<() => Promise<void>> => {
  const baseUrl = process.env.DATABASE_URL;
  if (!baseUrl) {
    const db = await openDatabase({ dataDir: "memory" });
    let dump: Blob;
    try {
      await db.migrate();
      const connection = db.orm.em.getConnection() as unknown as {
        getNativeClient(): Promise<{ dumpDataDir(compression: "none"): Promise<Blob> }>;
      };
      // Uncompressed: every test database loads it, and gunzip would cost each of them.
      dump = await (await connection.getNativeClient()).dumpDataDir("none");
    } finally {
      await db.close();
    }
    const file = path.join(tmpdir(), `fleet-test-template-${process.pid}-${crypto.randomUUID().slice(0, 8)}.tar`);
    await writeFile(file, Buffer.from(await dump.arrayBuffer()));
    process.env[PGLITE_TEMPLATE] = file;
    return async () => {
      delete process.env[PGLITE_TEMPLATE];
      await rm(file, { force: true });
    };
  }
  const name = `tpl_${Date.now().toString(36)}_${crypto.randomUUID().slice(0, 8)}`;
  await runOn(baseUrl, `create database "${name}"`);
  try {
    const db = await openDatabase({ databaseUrl: databaseUrlFor(baseUrl, name), dataDir: "memory", poolSize: 2 });
    try {
      await db.migrate();
    } finally {
      // A template with a connection open cannot be copied: all of them close here.
      await db.close();
    }
  } catch (error) {
    await runOn(baseUrl, `drop database if exists "${name}" with (force)`);
    throw error;
  }
  process.env[POSTGRES_TEMPLATE] = name;
  return async () => {
    delete process.env[POSTGRES_TEMPLATE];
    await runOn(baseUrl, `drop database if exists "${name}" with (force)`);
  };
};

let pgliteDump: { file: string; blob: Promise<Blob> } | undefined;

/** The run's dumped PGlite template, read once per worker process; undefined outside a run. */
export const pgliteTemplate = (): Promise<Blob> | undefined => {
  const file = process.env[PGLITE_TEMPLATE];
  if (!file) return undefined;
  if (pgliteDump?.file !== file) pgliteDump = { file, blob: readFile(file).then((bytes) => new Blob([bytes])) };
  return pgliteDump.blob;
};

/**
 * Puts the run's migrated PGlite template into `dataDir` (where `openDatabase({ dataDir })` keeps
 * its files), so a process started on it finds its migrations applied instead of running initdb
 * and every migration itself (seconds of CPU for each spawned app on PGlite). Returns false, and
 * leaves the directory alone, outside a run; a test about a first install must not call it.
 */
export const seedPgliteDataDir = (dataDir: string): boolean => {
  const file = process.env[PGLITE_TEMPLATE];
  if (!file) return false;
  const target = path.join(dataDir, "pglite");
  mkdirSync(target, { recursive: true });
  // The dump's members are absolute paths of PGlite's virtual file system; tar makes them relative.
  execFileSync("tar", ["-xf", file, "-C", target], { stdio: ["ignore", "ignore", "ignore"] });
  return true;
};

/** The run's PostgreSQL template database name; undefined outside a run. */
export const postgresTemplate = (): string | undefined => process.env[POSTGRES_TEMPLATE] || undefined;

export const databaseUrlFor = (baseUrl: string, name: string): string => {
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  return url.toString();
};

export const runOn = async (url: string, sql: string): Promise<void> => {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
};
