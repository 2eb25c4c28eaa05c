/**
 * Child process of the heartbeat bench: one server process sharing a port (SO_REUSEPORT) with its
 * siblings. `daemon` runs the real heartbeat daemon (startHeartbeat, as HEARTBEAT_WORKERS does);
 * `baseline` runs the no-op reference: a `ws` server that checks the same bearer token (SHA-256,
 * in-memory Map loaded once), parses the same JSON, and acks; its `POST /v1/heartbeat` does the same
 * over bare `node:http` (the HTTP baseline). Both close the way the daemon does on SIGTERM (1001 to
 * every peer, 2 s grace), so the reconnect storm starts alike. Driven over IPC by heartbeat-bench.ts.
 */
import { createHash } from "node:crypto";
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { createServer } from "node:http";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { writeHeapSnapshot } from "node:v8";
import type { AddressInfo, Socket } from "node:net";
import { openDatabase } from "@fleet/db";
import pino from "pino";
import { type WebSocket, WebSocketServer } from "ws";
import { loadHeartbeatConfig, type RunningHeartbeat, startHeartbeat } from "@fleet/heartbeat-daemon";

type Command =
  | { cmd: "start"; mode: "daemon" | "baseline"; port: number; databaseUrl: string; intervalMs: number; missed: number }
  | { cmd: "rss" }
  | { cmd: "stats" }
  | { cmd: "cpu" }
  | { cmd: "close" };

const reply = (message: unknown) => process.send?.(message);
// "last-resort" is V8's memory-reducing full GC: it also gives free pages and new space back, so
// RSS measures what is live, not what the allocator kept around from the connection burst.
const gcFn = (globalThis as { gc?: (options?: object) => void }).gc;
const gc = gcFn ? () => gcFn({ type: "major", execution: "sync", flavor: "last-resort" }) : undefined;

let close: (() => Promise<void>) | undefined;
// Only with BENCH_DEBUG: the histogram's 5 ms timer wakes the process 200 times a second, which
// cost about 13 ms of CPU per second in both servers and blurred the CPU per heartbeat it measures.
const loop = process.env.BENCH_DEBUG ? monitorEventLoopDelay({ resolution: 5 }) : undefined;
loop?.enable();
let stats: () => unknown = () => ({});

const startBaseline = async (port: number, databaseUrl: string, intervalMs: number) => {
  const db = await openDatabase({ databaseUrl, dataDir: "memory", poolSize: 1 });
  const rows = await db.query<{ h: string; id: string }>("select heartbeat_token_hash as h, id from routers");
  const owners = new Map(rows.map((r) => [r.h, r.id]));
  await db.close();
  const ack = JSON.stringify({ type: "ack", interval_ms: intervalMs });
  let frames = 0;
  const sockets = new Set<WebSocket>();
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: 16 * 1024,
    perMessageDeflate: false,
    clientTracking: false,
  });
  const ackHeaders = {
    "content-type": "application/json; charset=utf-8",
    "content-length": String(Buffer.byteLength(ack)),
  };
  // The HTTP baseline: bare node:http, the same token check (SHA-256, one Map lookup), the same JSON
  // parse and the same ack as the daemon's POST /v1/heartbeat.
  const server = createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
    const token = /^Bearer\s+(\S+)$/.exec(req.headers.authorization ?? "")?.[1] ?? "";
    if (req.method !== "POST" || !owners.has(createHash("sha256").update(token).digest("hex"))) {
      req.resume();
      res.writeHead(401).end();
      return;
    }
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      try {
        JSON.parse(Buffer.concat(chunks).toString("utf8"));
      } catch {
        res.writeHead(400).end('{"type":"error","message":"bad json"}');
        return;
      }
      frames += 1;
      res.writeHead(200, ackHeaders).end(ack);
    });
  });
  server.on("upgrade", (req, socket: Socket, head) => {
    socket.on("error", () => socket.destroy());
    const token = /^Bearer\s+(\S+)$/.exec(req.headers.authorization ?? "")?.[1] ?? "";
    if (!owners.has(createHash("sha256").update(token).digest("hex"))) {
      socket.end("HTTP/1.1 401 Unauthorized\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      sockets.add(ws);
      ws.on("close", () => sockets.delete(ws));
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
    // The accept queue the daemon asks for too (capped by net.core.somaxconn).
    server.listen({ host: "127.0.0.1", port, reusePort: true, exclusive: true, backlog: 65_535 }, resolve),
  );
  stats = () => ({ frames });
  close = async () => {
    // The daemon's graceful restart, so both restarts are alike: stop listening, the close handshake
    // (1001) with every peer, at most 2 s for it, then cut what is left.
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const ws of sockets) ws.close(1001, "going away");
    await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 2_000))]);
    for (const ws of sockets) ws.terminate();
    server.closeAllConnections();
  };
  return (server.address() as AddressInfo).port;
};

const startDaemon = async (port: number, databaseUrl: string, intervalMs: number, missed: number) => {
  const config = loadHeartbeatConfig({
    HOST: "127.0.0.1",
    HEARTBEAT_PORT: String(port),
    HEARTBEAT_INTERVAL_MS: String(intervalMs),
    MISSED_HEARTBEATS: String(missed),
    // Phase 8 keeps production's ratio of one sample per 10 heartbeats at a shorter interval.
    RESOURCE_SAMPLE_SECONDS: process.env.RESOURCE_SAMPLE_SECONDS ?? "300",
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

/**
 * BENCH_HEAP_PROF=<dir>:<after-s>:<for-s>[:promoted]: a daemon samples its heap from <after-s> after
 * its start for <for-s>, then writes `<pid>.heapprofile`: the sampled allocations of that span still
 * alive at its end, or with `promoted` also those a major collection freed: everything that outlived
 * the young generation, which sets the pace of the major collections.
 */
const heapProfile = () => {
  const [dir, after, span, promoted] = (process.env.BENCH_HEAP_PROF ?? "").split(":");
  if (!dir) return;
  const session = new Session();
  session.connect();
  setTimeout(async () => {
    // V8's protocol has the GC options; Node's types do not name them yet.
    const options = { samplingInterval: 4096, includeObjectsCollectedByMajorGC: promoted === "promoted" };
    await session.post("HeapProfiler.startSampling", options);
    setTimeout(async () => {
      const { profile } = await session.post("HeapProfiler.stopSampling");
      writeFileSync(`${dir}/${process.pid}.heapprofile`, JSON.stringify(profile));
    }, Number(span) * 1000).unref();
  }, Number(after) * 1000).unref();
};

/**
 * BENCH_HEAP_SNAP=<dir>:<after-s>:<gap-s>:<gap2-s>: a daemon writes three heap snapshots, at <after-s>,
 * <gap-s> later and <gap2-s> after that. Objects of the third with ids between the first's and the
 * second's were made in the first gap and outlived the second: what a young generation promotes.
 */
const heapSnapshots = () => {
  const [dir, after, gap, gap2] = (process.env.BENCH_HEAP_SNAP ?? "").split(":");
  if (!dir) return;
  const take = (n: number) => writeHeapSnapshot(`${dir}/${process.pid}-${n}.heapsnapshot`);
  setTimeout(() => {
    take(1);
    setTimeout(() => {
      take(2);
      setTimeout(() => take(3), Number(gap2) * 1000).unref();
    }, Number(gap) * 1000).unref();
  }, Number(after) * 1000).unref();
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
        if (message.mode === "daemon") {
          heapProfile();
          heapSnapshots();
        }
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
          loopDelayMs: loop && { p50: loop.percentile(50) / 1e6, p99: loop.percentile(99) / 1e6, max: loop.max / 1e6 },
        });
        loop?.reset();
        break;
      case "cpu": {
        const usage = process.cpuUsage();
        reply({ ok: true, cpuUs: usage.user + usage.system, userUs: usage.user, systemUs: usage.system });
        break;
      }
      case "close":
        await close?.();
        reply({ ok: true });
        process.exit(0);
    }
  } catch (error) {
    reply({ ok: false, error: String((error as Error).stack ?? error) });
  }
});
