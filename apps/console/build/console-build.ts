import { spawn } from "node:child_process";
import { existsSync, readdirSync, renameSync, rmSync, statSync } from "node:fs";
import path from "node:path";

/**
 * docs/console.md "Build": the console is a static bundle the API serves at /console. Nothing built
 * is committed; `npm start` builds it once when it is missing or older than its sources, so
 * `npm ci && npm start` serves it with no extra command, and a production image builds it in its
 * own stage (`npm run build:console`).
 */
export const consoleRoot = path.resolve(import.meta.dirname, "..");
/** Where the bundle lands; the API's default `CONSOLE_DIR`. */
export const consoleDistDir = path.join(consoleRoot, "dist");

/** What the bundle is made of: its own sources and the typed client it bundles from the API. */
const SOURCES = ["src", "index.html", "vite.config.ts", "package.json", "../api/src/client.ts"];

const newestMtime = (file: string): number => {
  const stat = statSync(file, { throwIfNoEntry: false });
  if (!stat) return 0;
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(0, ...readdirSync(file).map((name) => newestMtime(path.join(file, name))));
};

/** True when dist/index.html exists and is newer than every source file. */
export const consoleIsBuilt = (): boolean => {
  const index = statSync(path.join(consoleDistDir, "index.html"), { throwIfNoEntry: false });
  if (!index) return false;
  return index.mtimeMs >= Math.max(...SOURCES.map((source) => newestMtime(path.join(consoleRoot, source))));
};

/**
 * Builds into a private folder and moves it into place, so a server reading `dist/` never sees a
 * half-written bundle and two builders at once (a test and `npm start`) do not mix their files.
 * Runs in the process that calls it, which must have NODE_ENV unset or "production": Vite and the
 * React plugin pick React's development JSX from any other value (use `buildConsole`).
 */
export const buildConsoleHere = async (): Promise<{ dir: string; ms: number }> => {
  const started = performance.now();
  // Imported here: a production image carries the built bundle and no build tools.
  const { build } = await import("vite");
  const staging = path.join(consoleRoot, `.dist-${process.pid}-${Date.now()}`);
  try {
    await build({
      root: consoleRoot,
      configFile: path.join(consoleRoot, "vite.config.ts"),
      logLevel: "warn",
      mode: "production",
      build: { outDir: staging, emptyOutDir: true },
    });
    rmSync(consoleDistDir, { recursive: true, force: true });
    try {
      renameSync(staging, consoleDistDir);
    } catch (error) {
      // Another builder moved its bundle in first: theirs is as fresh as ours.
      if (!existsSync(path.join(consoleDistDir, "index.html"))) throw error;
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  return { dir: consoleDistDir, ms: Math.round(performance.now() - started) };
};

/**
 * The production build from any process (vitest runs with NODE_ENV=test): `build-console.ts` in a
 * child process with NODE_ENV=production.
 */
export const buildConsole = (): Promise<{ dir: string; ms: number }> =>
  new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, [path.join(consoleRoot, "build", "build-console.ts")], {
      env: { ...process.env, NODE_ENV: "production" },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.once("error", reject);
    child.once("exit", (code) => {
      if (code === 0) resolve({ dir: consoleDistDir, ms: Math.round(performance.now() - started) });
      else reject(new Error(`the console build exited with ${code}: ${stderr.trim().slice(-2000)}`));
    });
  });

export type ConsoleBuildOutcome = "fresh" | "built" | "failed";

/**
 * `npm start`'s step: build when missing or stale. Never fatal: without a bundle the rest of the
 * system still runs and /console says how to build it.
 */
export const ensureConsoleBuilt = async (log: {
  info(message: string): void;
  warn(message: string): void;
}): Promise<ConsoleBuildOutcome> => {
  if (consoleIsBuilt()) return "fresh";
  log.info("building the operator console (first start or changed sources)");
  try {
    const { ms } = await buildConsole();
    log.info(`operator console built in ${ms} ms`);
    return "built";
  } catch (error) {
    log.warn(`the operator console could not be built: ${(error as Error).message}`);
    return "failed";
  }
};

/**
 * docs/console.md "Bundle budget": everything the first page load fetches (its JavaScript and CSS,
 * gzip-compressed) stays within this; React, TanStack Query and tRPC's client are most of it.
 */
export const BUNDLE_BUDGET_GZIP_BYTES = 120 * 1024;
