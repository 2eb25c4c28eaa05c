/**
 * Child process of the heartbeat bench: a load generator holding a slice of the simulated routers'
 * WebSockets. About 4,000 sockets per loopback source address (ephemeral ports), sockets ended
 * with resetAndDestroy() so no TIME_WAIT is left for the next run. For the HTTP phase it posts the
 * same heartbeats over a small pool of keep-alive connections, as a load balancer in front of the
 * daemons would. Driven over IPC.
 */
import http from "node:http";
import type { Socket } from "node:net";
import WebSocket from "ws";
import { BENCH_INTERFACES } from "./lib/bench-fleet.ts";

type Command =
  | { cmd: "connect"; url: string; runId: string; from: number; to: number; perSource: number; concurrency: number }
  | { cmd: "cadence"; intervalMs: number }
  | { cmd: "record"; on: boolean }
  | { cmd: "saturate"; durationMs: number; perSocketHz: number }
  | { cmd: "silence"; from: number; to: number }
  | { cmd: "lastSent"; from: number; to: number }
  | { cmd: "counts" }
  | { cmd: "beat" }
  | { cmd: "http-cadence"; url: string; runId: string; from: number; to: number; intervalMs: number; pool: number }
  | { cmd: "http-saturate"; url: string; runId: string; from: number; to: number; pool: number; durationMs: number }
  | { cmd: "http-stop" }
  | { cmd: "close" };

interface Peer {
  index: number;
  token: string;
  source: string;
  ws: WebSocket | undefined;
  inFlight: number[];
  silent: boolean;
  lastSent: number;
  timer: NodeJS.Timeout | undefined;
}

const reply = (message: unknown) => process.send?.(message);
const peers: Peer[] = [];
let url = "";
let intervalMs = 0;
let recording = false;
let latencies: number[] = [];
let acks = 0;
let closing = false;
let saturating: { perSocketHz: number } | null = null;
/** Failed connection attempts so far by cause (HTTP status or socket error code), for BENCH_DEBUG. */
const failures: Record<string, number> = {};
const fail = (cause: string) => {
  failures[cause] = (failures[cause] ?? 0) + 1;
};

/** 127.3.x.y: the bench's own loopback sources, 4,000 sockets each. */
const sourceAddress = (n: number) => `127.3.${Math.floor(n / 250) % 250}.${(n % 250) + 1}`;

// No tunnel_ip: the seeded routers have no assigned address, and a differing report is logged.
const body = (index: number) =>
  JSON.stringify({
    type: "heartbeat",
    identity: `bench-${index}`,
    serial_number: `BENCH${index}`,
    software_version: "7.16.2",
    software_id: "BNCH-0001",
    model: "RB5009UG+S+",
    board_name: "RB5009UG+S+",
    hardwareboard: true,
    uptime: Math.floor(process.uptime()) + 86_400,
  });
// BENCH_HEALTH=1 (phase 8): every heartbeat also carries resources, 8 interfaces and a ping
// (docs/api.md "Health"), as the adoption script sends them: counters that grow, values as floats.
const HEALTH = process.env.BENCH_HEALTH === "1";
const IFACES = BENCH_INTERFACES;
const healthBody = (index: number) => {
  const t = Math.floor(Date.now() / 1000);
  return JSON.stringify({
    type: "heartbeat",
    identity: `bench-${index}`,
    serial_number: `BENCH${index}`,
    software_version: "7.16.2",
    software_id: "BNCH-0001",
    model: "RB5009UG+S+",
    board_name: "RB5009UG+S+",
    hardwareboard: true,
    uptime: Math.floor(process.uptime()) + 86_400,
    resources: {
      cpu_load: `${(index + t) % 37}.000000`,
      memory_total: 1073741824,
      memory_free: 536870912 - ((index * 4096) % 65536),
      disk_total: 134217728,
      disk_free: 67108864,
      temperature: `${40 + (index % 7)}.000000`,
      voltage: 24.1,
    },
    interfaces: IFACES.map((name, k) => ({
      name,
      rx_bytes: t * (1000 + k) + index,
      tx_bytes: t * (500 + k),
      rx_errors: 0,
      tx_errors: 0,
      running: true,
    })),
    ping: { target: "10.255.0.1", sent: 5, received: 5, rtt_avg_ms: "1.200000", rtt_max_ms: 2 },
  });
};
const frame = (peer: Peer) => (HEALTH ? healthBody(peer.index) : body(peer.index));

const send = (peer: Peer) => {
  const ws = peer.ws;
  if (!ws || ws.readyState !== WebSocket.OPEN || peer.silent) return;
  peer.inFlight.push(performance.now());
  peer.lastSent = Date.now();
  ws.send(frame(peer));
};

const schedule = (peer: Peer, firstDelay: number) => {
  clearTimeout(peer.timer);
  if (intervalMs <= 0 || peer.silent) return;
  peer.timer = setTimeout(function beat() {
    send(peer);
    peer.timer = setTimeout(beat, intervalMs);
  }, firstDelay);
};

const open = (peer: Peer): Promise<boolean> =>
  new Promise((resolve) => {
    const ws = new WebSocket(url, {
      headers: { authorization: `Bearer ${peer.token}` },
      localAddress: peer.source,
      perMessageDeflate: false,
    });
    peer.ws = ws;
    peer.inFlight = [];
    ws.on("error", (error: NodeJS.ErrnoException) => {
      fail(error.code ?? "error");
      resolve(false);
    });
    ws.on("unexpected-response", (_req, res) => {
      fail(String(res.statusCode));
      res.resume();
      resolve(false);
    });
    let opened = false;
    ws.on("open", () => {
      opened = true;
      resolve(true);
    });
    ws.on("message", () => {
      const sent = peer.inFlight.shift();
      acks += 1;
      if (sent !== undefined && recording) latencies.push(performance.now() - sent);
      if (saturating && sent !== undefined) {
        // Closed loop, capped per socket like a real (if eager) router.
        const wait = Math.max(0, 1000 / saturating.perSocketHz - (performance.now() - sent));
        peer.timer = setTimeout(() => send(peer), wait);
      }
    });
    ws.on("close", () => {
      // Only an established connection that drops starts a reconnect; failed attempts are retried by their loop.
      if (!opened || peer.ws !== ws || closing || peer.silent) return;
      peer.ws = undefined;
      // The daemon went away (restart): come back soon, as routers do.
      setTimeout(
        async () => {
          if (closing || peer.silent) return;
          // Until it is back (the reconnect storm measures how long that takes).
          for (let attempt = 0; attempt < 10_000 && !(await open(peer)); attempt++) {
            await new Promise((r) => setTimeout(r, 200 + Math.random() * 300));
            if (closing || peer.silent) return;
          }
          send(peer);
          schedule(peer, intervalMs * Math.random());
        },
        100 + Math.random() * 500,
      );
    });
  });

const destroy = (peer: Peer) => {
  clearTimeout(peer.timer);
  const raw = (peer.ws as unknown as { _socket?: Socket } | undefined)?._socket;
  if (raw) raw.resetAndDestroy();
  else peer.ws?.terminate();
};

// ---- HTTP: routers behind a load balancer's keep-alive pool ----------------------------------
let httpAgent: http.Agent | undefined;
let httpTimers: NodeJS.Timeout[] = [];
let httpStopped = false;
let httpErrors = 0;
/** Answers by HTTP status (and failed requests as "failed") since the last http-cadence or http-saturate. */
let httpStatuses: Record<string, number> = {};

const post = (target: URL, runId: string, index: number): Promise<boolean> =>
  new Promise((resolve) => {
    const started = performance.now();
    const text = HEALTH ? healthBody(index) : body(index);
    const req = http.request(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method: "POST",
        agent: httpAgent,
        headers: {
          authorization: `Bearer hb_bench_${runId}_${index}`,
          "content-type": "application/json",
          "content-length": Buffer.byteLength(text),
        },
      },
      (res) => {
        res.resume();
        const status = String(res.statusCode);
        httpStatuses[status] = (httpStatuses[status] ?? 0) + 1;
        res.on("end", () => {
          if (res.statusCode === 200) {
            acks += 1;
            if (recording) latencies.push(performance.now() - started);
            resolve(true);
          } else {
            httpErrors += 1;
            resolve(false);
          }
        });
      },
    );
    req.on("error", () => {
      httpStatuses.failed = (httpStatuses.failed ?? 0) + 1;
      httpErrors += 1;
      resolve(false);
    });
    req.end(text);
  });

const stopHttp = () => {
  httpStopped = true;
  for (const t of httpTimers) clearTimeout(t);
  httpTimers = [];
  httpAgent?.destroy();
  httpAgent = undefined;
};

process.on("message", async (message: Command) => {
  switch (message.cmd) {
    case "connect": {
      url = message.url;
      const created: Peer[] = [];
      for (let i = message.from; i < message.to; i++) {
        const peer: Peer = {
          index: i,
          token: `hb_bench_${message.runId}_${i}`,
          source: sourceAddress(Math.floor(i / message.perSource)),
          ws: undefined,
          inFlight: [],
          silent: false,
          lastSent: 0,
          timer: undefined,
        };
        peers.push(peer);
        created.push(peer);
      }
      let failed = 0;
      for (let i = 0; i < created.length; i += message.concurrency) {
        const results = await Promise.all(created.slice(i, i + message.concurrency).map(open));
        failed += results.filter((ok) => !ok).length;
      }
      reply({ ok: true, connected: created.length - failed, failed });
      break;
    }
    case "cadence":
      intervalMs = message.intervalMs;
      saturating = null;
      for (const peer of peers) schedule(peer, Math.random() * intervalMs);
      reply({ ok: true });
      break;
    case "record":
      recording = message.on;
      if (message.on) {
        latencies = [];
        reply({ ok: true });
      } else {
        reply({ ok: true, latencies });
        latencies = [];
      }
      break;
    case "saturate": {
      intervalMs = 0;
      for (const peer of peers) clearTimeout(peer.timer);
      await new Promise((r) => setTimeout(r, 200));
      saturating = { perSocketHz: message.perSocketHz };
      const before = acks;
      for (const peer of peers) send(peer);
      await new Promise((r) => setTimeout(r, message.durationMs));
      const done = acks - before;
      saturating = null;
      for (const peer of peers) clearTimeout(peer.timer);
      await new Promise((r) => setTimeout(r, 500));
      reply({ ok: true, acks: done });
      break;
    }
    case "silence": {
      const last: Record<number, number> = {};
      for (const peer of peers) {
        if (peer.index < message.from || peer.index >= message.to) continue;
        peer.silent = true;
        last[peer.index] = peer.lastSent;
        destroy(peer);
      }
      reply({ ok: true, last });
      break;
    }
    case "lastSent": {
      const last: Record<number, number> = {};
      for (const peer of peers)
        if (peer.index >= message.from && peer.index < message.to) last[peer.index] = peer.lastSent;
      reply({ ok: true, last });
      break;
    }
    case "counts":
      reply({ ok: true, open: peers.filter((p) => p.ws?.readyState === WebSocket.OPEN).length, acks, failures });
      break;
    case "beat":
      for (const peer of peers) send(peer);
      reply({ ok: true });
      break;
    case "http-cadence": {
      stopHttp();
      httpStopped = false;
      httpErrors = 0;
      httpStatuses = {};
      httpAgent = new http.Agent({ keepAlive: true, maxSockets: message.pool, scheduling: "fifo" });
      const target = new URL(message.url);
      const count = message.to - message.from;
      // One timer slot per 10 ms of the interval, each posting its routers: N timers would cost
      // the load generator more than the requests.
      const slots = Math.max(1, Math.floor(message.intervalMs / 10));
      for (let k = 0; k < slots; k++) {
        const lo = message.from + Math.floor((k * count) / slots);
        const hi = message.from + Math.floor(((k + 1) * count) / slots);
        if (hi <= lo) continue;
        const fire = () => {
          if (httpStopped) return;
          for (let i = lo; i < hi; i++) void post(target, message.runId, i);
        };
        const first = setTimeout(
          () => {
            fire();
            httpTimers.push(setInterval(fire, message.intervalMs));
          },
          (k * message.intervalMs) / slots,
        );
        httpTimers.push(first);
      }
      reply({ ok: true });
      break;
    }
    case "http-saturate": {
      stopHttp();
      httpStopped = false;
      httpErrors = 0;
      httpStatuses = {};
      httpAgent = new http.Agent({ keepAlive: true, maxSockets: message.pool });
      const target = new URL(message.url);
      const count = message.to - message.from;
      const deadline = performance.now() + message.durationMs;
      let next = 0;
      const before = acks;
      // Closed loop: each pooled connection posts the next router's heartbeat when the last is answered.
      const worker = async () => {
        while (performance.now() < deadline && !httpStopped) {
          const index = message.from + (next++ % count);
          await post(target, message.runId, index);
        }
      };
      await Promise.all(Array.from({ length: message.pool }, worker));
      const done = acks - before;
      stopHttp();
      reply({ ok: true, acks: done, errors: httpErrors, statuses: httpStatuses });
      break;
    }
    case "http-stop":
      stopHttp();
      reply({ ok: true, errors: httpErrors });
      break;
    case "close":
      closing = true;
      stopHttp();
      for (const peer of peers) destroy(peer);
      reply({ ok: true });
      setTimeout(() => process.exit(0), 100);
      break;
  }
});
