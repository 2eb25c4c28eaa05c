import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { openDatabase } from "@fleet/db";
import { createTestDatabase, makeRouter, makeUser, seedPgliteDataDir, type TestDatabase } from "@fleet/db/testing";
import { generateEd25519KeyPair } from "@fleet/shared";
import { eventually } from "@fleet/shared/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/**
 * docs/operations.md "Signals": every app stops gracefully when SIGTERM goes to the one process a
 * supervisor started, both the way the image starts it (the Dockerfile's ENTRYPOINT + the app's
 * CMD: node itself) and the way `npm start` / `npm run start:*` do (npm -> sh exec'ing node). The
 * graceful path is checked by its effects: the `shutting down` line, exit 0, a request that was in
 * flight still answered, acknowledged heartbeats written, and no process of the tree left alive.
 */
const root = path.resolve(import.meta.dirname, "../..");

/** `FROM ... AS <stage>` -> the stage's CMD and ENTRYPOINT (its own, else the one of the stage it is built from). */
const dockerfile = (() => {
  const text = readFileSync(path.join(root, "Dockerfile"), "utf8");
  const cmds = new Map<string, string[]>();
  const entrypoints = new Map<string, string[]>();
  let stage = "";
  for (const line of text.split("\n")) {
    const from = /^FROM (\S+) AS (\S+)/.exec(line);
    if (from?.[2]) {
      stage = from[2];
      const inherited = entrypoints.get(from[1] ?? "");
      if (inherited) entrypoints.set(stage, inherited);
    }
    const cmd = /^CMD (\[.*\])$/.exec(line);
    if (cmd?.[1]) cmds.set(stage, JSON.parse(cmd[1]) as string[]);
    const entrypoint = /^ENTRYPOINT (\[.*\])$/.exec(line);
    if (entrypoint?.[1]) entrypoints.set(stage, JSON.parse(entrypoint[1]) as string[]);
  }
  return { entrypoints, cmds };
})();

type Launch = "image" | "npm";
type App = "all-in-one" | "api" | "heartbeat" | "tunnel-agent";
const NPM_SCRIPT: Record<App, string> = {
  "all-in-one": "start",
  api: "start:api",
  heartbeat: "start:heartbeat",
  "tunnel-agent": "start:tunnel-agent",
};

const argvOf = (app: App, launch: Launch): string[] => {
  if (launch === "npm") return ["npm", "run", "--silent", NPM_SCRIPT[app]];
  const cmd = dockerfile.cmds.get(app);
  const entrypoint = dockerfile.entrypoints.get(app);
  if (!entrypoint || !cmd) throw new Error(`Dockerfile has no ENTRYPOINT or no CMD for stage ${app}`);
  // The image's `node` is Node 24 on PATH; here it is the pinned one running this test.
  const [program, ...rest] = entrypoint;
  return [program === "node" ? process.execPath : (program ?? ""), ...rest, ...cmd];
};

/** Every descendant of `pid` now alive (from /proc), to prove none outlives the stop. */
const descendants = (pid: number): number[] => {
  const found: number[] = [];
  const walk = (parent: number) => {
    for (const task of existsSync(`/proc/${parent}/task`) ? readdirSync(`/proc/${parent}/task`) : []) {
      let children = "";
      try {
        children = readFileSync(`/proc/${parent}/task/${task}/children`, "utf8");
      } catch {
        continue;
      }
      for (const child of children.trim().split(/\s+/).filter(Boolean).map(Number)) {
        found.push(child);
        walk(child);
      }
    }
  };
  walk(pid);
  return found;
};
const alive = (pid: number): boolean => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return !/^\d+ \(.*\) Z /.test(stat);
  } catch {
    return false;
  }
};

/** Cleanup after a failed check: the process and everything under it (npm's node would outlive npm). */
const killTree = (proc: Running) => {
  const pid = proc.child.pid;
  if (pid === undefined || proc.child.exitCode !== null) return;
  for (const child of descendants(pid)) {
    try {
      process.kill(child, "SIGKILL");
    } catch {
      // already gone
    }
  }
  proc.child.kill("SIGKILL");
};

interface Running {
  child: ChildProcess;
  exited: Promise<number | null>;
  /** JSON log lines written so far. */
  logs(): Array<Record<string, unknown>>;
  output(): string;
}

const start = (app: App, launch: Launch, env: Record<string, string>): Running => {
  const [program, ...args] = argvOf(app, launch);
  const child = spawn(program ?? "", args, {
    cwd: root,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? tmpdir(), ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    out += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    err += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const logs = () =>
    out
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  return { child, exited, logs, output: () => `${out}\n${err}` };
};

const logged = (proc: Running, msg: string) =>
  eventually(
    () => {
      if (proc.child.exitCode !== null) throw new Error(`exited ${proc.child.exitCode}: ${proc.output()}`);
      return proc.logs().find((line) => line.msg === msg);
    },
    `log "${msg}"`,
    90_000,
  );

const printed = (proc: Running, pattern: RegExp) =>
  eventually(
    () => {
      if (proc.child.exitCode !== null) throw new Error(`exited ${proc.child.exitCode}: ${proc.output()}`);
      return pattern.exec(proc.output())?.[1];
    },
    `output ${pattern}`,
    90_000,
  );

/**
 * A request held in flight: headers and half of a JSON body sent, the rest sent on `finish()`,
 * which resolves with the status the server then answers.
 */
/**
 * A request the server is surely working on: its headers carry `Expect: 100-continue`, so the
 * server answers "100 Continue" only once it has parsed them (the request is then in progress and
 * no longer an idle connection a shutdown may close). `started` resolves then; `finish` sends the
 * body and resolves with the final status.
 */
const inFlight = (url: string, pathname: string, body: string) => {
  const target = new URL(pathname, url);
  const req = request(target, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "content-length": Buffer.byteLength(body),
      expect: "100-continue",
    },
  });
  const started = new Promise<void>((resolve, reject) => {
    req.on("continue", () => resolve());
    req.on("error", reject);
  });
  const answered = new Promise<number>((resolve, reject) => {
    req.on("response", (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.on("error", reject);
  });
  req.flushHeaders();
  return {
    started,
    finish: () => {
      req.end(body);
      return answered;
    },
  };
};

/** SIGTERM to the one process, then the graceful path's evidence; returns the ms it took. */
const stopGracefully = async (proc: Running): Promise<number> => {
  const pid = proc.child.pid ?? 0;
  const tree = descendants(pid);
  const began = Date.now();
  proc.child.kill("SIGTERM");
  const code = await proc.exited;
  const took = Date.now() - began;
  expect(code, proc.output()).toBe(0);
  expect(proc.logs().some((line) => line.msg === "shutting down")).toBe(true);
  expect(tree.filter(alive)).toEqual([]);
  expect(took).toBeLessThan(15_000);
  return took;
};

describe.each<Launch>(["image", "npm"])("SIGTERM to the process started as %s does", { timeout: 120_000 }, (launch) => {
  let dir: string;
  let pg: TestDatabase | undefined;
  let env: Record<string, string>;
  const databaseUrl = process.env.DATABASE_URL;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "fleet-signals-"));
    const keyFile = path.join(dir, "agent_key");
    writeFileSync(keyFile, generateEd25519KeyPair().private, { mode: 0o600 });
    // What production needs (the image sets NODE_ENV=production), so the full configuration starts.
    env = {
      NODE_ENV: "production",
      HOST: "127.0.0.1",
      PORT: "0",
      HEARTBEAT_PORT: "0",
      AGENT_HEALTH_PORT: "0",
      STRIPE_EMULATOR: "true",
      STRIPE_EMULATOR_PORT: "0",
      ENTRY_POINT_PORTS: "63340-63349",
      AUTH_DEV_LOGIN: "true",
      JWT_SECRET: `signals-${crypto.randomUUID()}`,
      WEBHOOK_ENCRYPTION_KEY: `signals-${crypto.randomUUID()}`,
      ACCESS_PASSWORD_KEY: `signals-${crypto.randomUUID()}`,
      TUNNEL_SSH_KEY: keyFile,
      METRICS_TOKEN: `signals-${crypto.randomUUID()}`,
      LOG_LEVEL: "info",
    };
    if (databaseUrl) {
      pg = await createTestDatabase();
      env.DATABASE_URL = pg.url ?? "";
    } else {
      // Each app's own PGlite directory starts migrated: these tests are about stopping, not installing.
      for (const app of ["all-in-one", "api", "heartbeat", "tunnel-agent"] as const) seedPgliteDataDir(dataDir(app));
    }
  });

  afterAll(async () => {
    await pg?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Each app gets its own database: one PGlite directory per process, or the test's PostgreSQL one. */
  const dataDir = (app: App) => path.join(dir, app);

  /** A router whose heartbeats the test sends, made directly in the app's database. */
  const seedRouter = async (app: App) => {
    const db = pg ?? (await openDatabase({ dataDir: dataDir(app) }));
    if (!pg) await db.migrate();
    const router = await makeRouter(db, await makeUser(db));
    if (!pg) await db.close();
    return router;
  };
  const identityOf = async (app: App, routerId: string) => {
    const db = pg ?? (await openDatabase({ dataDir: dataDir(app) }));
    const [row] = await db.query<{ identity: string }>("select identity from routers where id = $1", [routerId]);
    if (!pg) await db.close();
    return row?.identity;
  };

  it("all-in-one: answers the request in flight and writes the last heartbeats", async () => {
    const router = await seedRouter("all-in-one");
    const proc = start("all-in-one", launch, { ...env, DATA_DIR: dataDir("all-in-one") });
    try {
      // The banner on stderr names the URLs (the all-in-one logs no listening line of its own).
      const heartbeat = await printed(proc, /POST (http:\/\/\S+)\/v1\/heartbeat/);
      const api = await printed(proc, /API\s+(http:\/\/\S+)/);
      const pending = inFlight(api, "/v1/auth/dev-login", JSON.stringify({ email: "inflight@example.com" }));
      await pending.started;
      // The heartbeat is acknowledged (so it must be written), then the stop begins at once.
      const identity = `sig-${launch}`;
      const beat = await fetch(`${heartbeat}/v1/heartbeat`, {
        method: "POST",
        headers: { authorization: `Bearer ${router.heartbeatToken}`, "content-type": "application/json" },
        body: JSON.stringify({ type: "heartbeat", identity }),
      });
      expect(beat.status).toBe(200);
      const stopped = stopGracefully(proc);
      await logged(proc, "shutting down").catch(() => undefined);
      expect(await pending.finish()).toBe(200);
      await stopped;
      expect(await identityOf("all-in-one", router.id)).toBe(identity);
    } finally {
      killTree(proc);
    }
  });

  it("api alone: finishes the request in flight", async () => {
    const proc = start("api", launch, { ...env, DATA_DIR: dataDir("api") });
    try {
      const api = String((await logged(proc, "api listening")).url);
      const pending = inFlight(api, "/v1/auth/dev-login", JSON.stringify({ email: "inflight@example.com" }));
      await pending.started;
      const stopped = stopGracefully(proc);
      await logged(proc, "shutting down").catch(() => undefined);
      expect(await pending.finish()).toBe(200);
      await stopped;
    } finally {
      killTree(proc);
    }
  });

  it("heartbeat daemon alone: writes the heartbeats it acknowledged", async () => {
    const router = await seedRouter("heartbeat");
    const proc = start("heartbeat", launch, { ...env, DATA_DIR: dataDir("heartbeat") });
    try {
      const url = String((await logged(proc, "heartbeat daemon listening")).url);
      const identity = `sig-alone-${launch}`;
      const beat = await fetch(`${url}/v1/heartbeat`, {
        method: "POST",
        headers: { authorization: `Bearer ${router.heartbeatToken}`, "content-type": "application/json" },
        body: JSON.stringify({ type: "heartbeat", identity }),
      });
      expect(beat.status).toBe(200);
      await stopGracefully(proc);
      expect(await identityOf("heartbeat", router.id)).toBe(identity);
    } finally {
      killTree(proc);
    }
  });

  it("tunnel agent alone: stops its jobs, relay and health port", async () => {
    const proc = start("tunnel-agent", launch, { ...env, DATA_DIR: dataDir("tunnel-agent") });
    try {
      const { port } = await logged(proc, "health port listening");
      expect((await fetch(`http://127.0.0.1:${String(port)}/readyz`)).status).toBe(200);
      await stopGracefully(proc);
    } finally {
      killTree(proc);
    }
  });
});
