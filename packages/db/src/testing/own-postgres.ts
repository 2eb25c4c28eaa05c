import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * A PostgreSQL cluster of the test's own, on a free loopback port, that the test may stop and start
 * (a database outage). Never the shared server of `DATABASE_URL`: stopping that would fail every
 * other test running beside it. Run as the `postgres` OS user when the test runs as root (PostgreSQL
 * refuses to run as root). Undefined when no PostgreSQL binaries are installed.
 */
export interface OwnPostgres {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` */
  url: string;
  port: number;
  /** Fast shutdown: sessions are ended (57P01), new connections refused until `start`. */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Stops the cluster and removes its directory. */
  destroy(): Promise<void>;
}

const binDir = (): string | undefined => {
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, "bin", "pg_ctl")))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : join(root, versions[0], "bin");
};

const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });

const postgresUser = (): { uid: number; gid: number } | undefined => {
  if (process.getuid?.() !== 0) return undefined;
  const uid = Number(execFileSync("id", ["-u", "postgres"]).toString().trim());
  const gid = Number(execFileSync("id", ["-g", "postgres"]).toString().trim());
  return { uid, gid };
};

const run = (file: string, args: string[], user: { uid: number; gid: number } | undefined): Promise<void> =>
  new Promise((resolve, reject) => {
    const child = spawn(file, args, { stdio: ["ignore", "ignore", "pipe"], ...(user ?? {}) });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.once("error", reject);
    child.once("exit", (code) =>
      code === 0 ? resolve() : reject(new Error(`${file} ${args.join(" ")} exited ${code}: ${stderr}`)),
    );
  });

export const startOwnPostgres = async (): Promise<OwnPostgres | undefined> => {
  const bin = binDir();
  if (!bin) return undefined;
  const user = postgresUser();
  const dir = mkdtempSync(join(tmpdir(), "own-pg-"));
  if (user) execFileSync("chown", [`${user.uid}:${user.gid}`, dir]);
  const data = join(dir, "data");
  const port = await freePort();
  await run(join(bin, "initdb"), ["-D", data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"], user);
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off`;
  const start = () =>
    run(join(bin, "pg_ctl"), ["-D", data, "-o", options, "-l", join(dir, "log"), "-w", "start"], user);
  const stop = () => run(join(bin, "pg_ctl"), ["-D", data, "-m", "fast", "-w", "stop"], user);
  await start();
  let running = true;
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    stop: async () => {
      await stop();
      running = false;
    },
    start: async () => {
      await start();
      running = true;
    },
    destroy: async () => {
      if (running) await stop().catch(() => {});
      running = false;
      rmSync(dir, { recursive: true, force: true });
    },
  };
};
