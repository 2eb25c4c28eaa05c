/**
 * Child process of the heartbeat bench: one server process sharing a port (SO_REUSEPORT) with its
 * siblings. `daemon` runs the real heartbeat daemon (startHeartbeat, as HEARTBEAT_WORKERS does);
 * `baseline` runs the no-op reference: a `ws` server that checks the same bearer token (SHA-256,
 * in-memory set loaded once), parses the same JSON, and acks. Driven over IPC by heartbeat-bench.ts.
 */
import { createHash } from "node:crypto";
import { createServer } from "node:http";
import { monitorEventLoopDelay } from "node:perf_hooks";
import type { AddressInfo, Socket } from "node:net";
import { openDatabase } from "@fleet/db";
import pino from "pino";
import { WebSocketServer } from "ws";
import { loadHeartbeatConfig, type RunningHeartbeat, startHeartbeat } from "@fleet/heartbeat-daemon";

type Command =
  | { cmd: "start"; mode: "daemon" | "baseline"; port: number; databaseUrl: string; intervalMs: number; missed: number }
  | { cmd: "rss" }
  | { cmd: "stats" }
  | { cmd: "close" };

const reply = (message: unknown) => process.send?.(message);
// "last-resort" is V8's memory-reducing full GC: it also gives free pages and new space back, so
// RSS measures what is live, not what the allocator kept around from the connection burst.
const gcFn = (globalThis as { gc?: (options?: object) => void }).gc;
const gc = gcFn ? () => gcFn({ type: "major", execution: "sync", flavor: "last-resort" }) : undefined;

let close: (() => Promise<void>) | undefined;
const loop = monitorEventLoopDelay({ resolution: 5 });
loop.enable();
let stats: () => unknown = () => ({});

const startBaseline = async (port: number, databaseUrl: string, intervalMs: number) => {
  const db = await openDatabase({ databaseUrl, dataDir: "memory", poolSize: 1 });
  const rows = await db.query<{ h: string }>("select heartbeat_token_hash as h from routers");
  const hashes = new Set(rows.map((r) => r.h));
  await db.close();
  const ack = JSON.stringify({ type: "ack", interval_ms: intervalMs });
  let frames = 0;
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: 16 * 1024,
    perMessageDeflate: false,
    clientTracking: false,
  });
  const server = createServer((_req, res) => res.end());
  server.on("upgrade", (req, socket: Socket, head) => {
    socket.on("error", () => socket.destroy());
    const token = /^Bearer\s+(\S+)$/.exec(req.headers.authorization ?? "")?.[1] ?? "";
    if (!hashes.has(createHash("sha256").update(token).digest("hex"))) {
      socket.end("HTTP/1.1 401 Unauthorized\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      ws.on("error", () => {});
      ws.on("message", (data) => {
        try {
          JSON.parse(data.toString());
        } catch {
          ws.send('{"type":"error","message":"bad json"}');
          return;
        }
        frames += 1;
        ws.send(ack);
      });
    });
  });
  await new Promise<void>((resolve) =>
    server.listen({ host: "127.0.0.1", port, reusePort: true, exclusive: true }, resolve),
  );
  stats = () => ({ frames });
  close = async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  };
  return (server.address() as AddressInfo).port;
};

const startDaemon = async (port: number, databaseUrl: string, intervalMs: number, missed: number) => {
  const config = loadHeartbeatConfig({
    HOST: "127.0.0.1",
    HEARTBEAT_PORT: String(port),
    HEARTBEAT_INTERVAL_MS: String(intervalMs),
    MISSED_HEARTBEATS: String(missed),
    DATABASE_URL: databaseUrl,
    LOG_LEVEL: "warn",
  });
  const db = await openDatabase({ databaseUrl, dataDir: "memory", poolSize: 4 });
  const daemon: RunningHeartbeat = await startHeartbeat({
    config,
    db,
    logger: pino({ level: "warn" }),
    reusePort: true,
  });
  stats = () => daemon.stats();
  close = async () => {
    await daemon.close();
    await db.close();
  };
  return daemon.port;
};

process.on("message", async (message: Command) => {
  try {
    switch (message.cmd) {
      case "start": {
        const port =
          message.mode === "daemon"
            ? await startDaemon(message.port, message.databaseUrl, message.intervalMs, message.missed)
            : await startBaseline(message.port, message.databaseUrl, message.intervalMs);
        reply({ ok: true, port, pid: process.pid });
        break;
      }
      case "rss":
        for (let i = 0; i < 3; i++) gc?.();
        reply({ ok: true, rss: process.memoryUsage().rss, memory: process.memoryUsage() });
        break;
      case "stats":
        reply({
          ok: true,
          stats: stats(),
          loopDelayMs: { p50: loop.percentile(50) / 1e6, p99: loop.percentile(99) / 1e6, max: loop.max / 1e6 },
        });
        loop.reset();
        break;
      case "close":
        await close?.();
        reply({ ok: true });
        process.exit(0);
    }
  } catch (error) {
    reply({ ok: false, error: String((error as Error).stack ?? error) });
  }
});
