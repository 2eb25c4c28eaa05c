/**
 * Child process of the heartbeat bench: a load generator holding a slice of the simulated routers'
 * WebSockets. About 4,000 sockets per loopback source address (ephemeral ports), sockets ended
 * with resetAndDestroy() so no TIME_WAIT is left for the next run. Driven over IPC.
 */
import type { Socket } from "node:net";
import WebSocket from "ws";

type Command =
  | { cmd: "connect"; url: string; runId: string; from: number; to: number; perSource: number; concurrency: number }
  | { cmd: "cadence"; intervalMs: number }
  | { cmd: "record"; on: boolean }
  | { cmd: "saturate"; durationMs: number; perSocketHz: number }
  | { cmd: "silence"; from: number; to: number }
  | { cmd: "lastSent"; from: number; to: number }
  | { cmd: "counts" }
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

/** 127.3.x.y: the bench's own loopback sources, 4,000 sockets each. */
const sourceAddress = (n: number) => `127.3.${Math.floor(n / 250) % 250}.${(n % 250) + 1}`;

const frame = (peer: Peer) =>
  JSON.stringify({
    type: "heartbeat",
    identity: `bench-${peer.index}`,
    serial_number: `BENCH${peer.index}`,
    software_version: "7.16.2",
    software_id: "BNCH-0001",
    model: "RB5009UG+S+",
    board_name: "RB5009UG+S+",
    hardwareboard: true,
    uptime: Math.floor(process.uptime()) + 86_400,
    tunnel_ip: "127.0.0.2",
  });

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
    ws.on("error", () => resolve(false));
    ws.on("unexpected-response", (_req, res) => {
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
          for (let attempt = 0; attempt < 100 && !(await open(peer)); attempt++) {
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
      reply({ ok: true, open: peers.filter((p) => p.ws?.readyState === WebSocket.OPEN).length, acks });
      break;
    case "close":
      closing = true;
      for (const peer of peers) destroy(peer);
      reply({ ok: true });
      setTimeout(() => process.exit(0), 100);
      break;
  }
});
