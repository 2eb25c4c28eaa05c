import { type ChildProcess, spawn } from "node:child_process";
import net from "node:net";

export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = net.createServer();
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() =>
        typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port")),
      );
    });
  });

/** Starts a TypeScript entry point on the project's Node and waits until `healthUrl` answers 200. */
export const startProcess = async (
  entry: string,
  env: Record<string, string>,
  healthUrl: string,
): Promise<ChildProcess> => {
  const child = spawn(process.execPath, [...(process.env.BENCH_NODE_ARGS ?? "").split(" ").filter(Boolean), entry], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "ignore", "inherit"],
  });
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${entry} exited with ${child.exitCode}`);
    try {
      const res = await fetch(healthUrl);
      if (res.status === 200) return child;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  child.kill("SIGKILL");
  throw new Error(`${entry} did not become healthy`);
};

export const stopProcess = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once("exit", () => resolve());
    child.kill("SIGTERM");
  });

/** CPU time (user + system, ms) a process has used so far, from /proc (Linux). */
export const cpuMs = async (pid: number | undefined): Promise<number> => (await cpuTimesMs(pid)).total;

/** CPU time a process has used so far in user and in system (kernel) mode, ms, from /proc (Linux). */
export const cpuTimesMs = async (pid: number | undefined): Promise<{ user: number; system: number; total: number }> => {
  if (pid === undefined) return { user: Number.NaN, system: Number.NaN, total: Number.NaN };
  const { readFile } = await import("node:fs/promises");
  const fields = (await readFile(`/proc/${pid}/stat`, "utf8")).split(") ")[1]?.split(" ") ?? [];
  const user = (Number(fields[11]) * 1000) / 100;
  const system = (Number(fields[12]) * 1000) / 100;
  return { user, system, total: user + system };
};
