import { fork } from "node:child_process";
import { request } from "node:http";
import path from "node:path";
import { connect as tcpConnect, type Socket } from "node:net";
import { createTestDatabase, makeRouter, makeUser, type TestDatabase } from "@fleet/db/testing";
import { eventually } from "@fleet/shared/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HeartbeatTuning } from "../config.ts";
import { connectOk, type DaemonHarness, startDaemonHarness } from "../testing/daemon-harness.ts";

/**
 * docs/api.md "Routers and heartbeats": the heartbeat port serves routers first. Idle, slow and
 * probing connections without a token are closed quickly, and however many one address (or many
 * addresses) open, a router with a valid token is acknowledged within 2 s. Everything here is
 * loopback, and bounded: the daemon runs in this process, so every connection costs two of the
 * process's 20,000 descriptors.
 */
const ACK_WITHIN_MS = 2_000;
const HEARTBEAT = JSON.stringify({ type: "heartbeat", identity: "router-first" });

let db: TestDatabase;
let owner: { organizationId: string; teamId: string };

beforeAll(async () => {
  db = await createTestDatabase();
  owner = await makeUser(db);
});

afterAll(async () => {
  await db?.close();
});

const startDaemon = (tuning: Partial<HeartbeatTuning>) =>
  startDaemonHarness(db, { intervalMs: 1_000, missedHeartbeats: 3, tuning });

/** A raw TCP connection from `localAddress`; `closed` resolves (with the time) when the daemon ends it. */
interface Raw {
  socket: Socket;
  /** Before connecting: the daemon's deadline for the connection cannot start earlier (lower bounds). */
  startedAt: number;
  /** When the client saw the connection up: the deadline cannot start later (upper bounds). */
  openedAt: number;
  closedAt: number | null;
  closed: Promise<number>;
}

const openRaw = (port: number, localAddress = "127.0.0.1"): Promise<Raw> =>
  new Promise((resolve, reject) => {
    const startedAt = performance.now();
    const socket = tcpConnect({ host: "127.0.0.1", port, localAddress });
    const raw: Raw = { socket, startedAt, openedAt: 0, closedAt: null, closed: Promise.resolve(0) };
    raw.closed = new Promise((done) =>
      socket.once("close", () => {
        raw.closedAt = performance.now();
        done(raw.closedAt);
      }),
    );
    socket.on("error", () => {});
    socket.resume();
    socket.once("connect", () => {
      raw.openedAt = performance.now();
      resolve(raw);
    });
    socket.once("close", () => reject(new Error("closed before connecting")));
  });

/**
 * `count` idle, slow and probing connections from `addresses` loopback addresses, held by a child
 * process (testing/idle-connections.ts) so that the daemon does not share its event loop with them.
 */
const attack = async (port: number, count: number, addresses: number) => {
  const child = fork(
    path.join(import.meta.dirname, "../testing/idle-connections.ts"),
    [String(port), String(count), String(addresses)],
    { execArgv: [], stdio: ["ignore", "ignore", "inherit", "ipc"] },
  );
  const replies: Array<(counts: { held: number; opened: number }) => void> = [];
  const ready = new Promise<{ held: number; opened: number }>((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`attacker exited (${code})`)));
    child.on("message", (message: { ready?: boolean; held: number; opened: number }) => {
      if (message.ready) resolve(message);
      else replies.shift()?.(message);
    });
  });
  const atStart = await ready;
  return {
    atStart,
    counts: () =>
      new Promise<{ held: number; opened: number }>((resolve) => {
        replies.push(resolve);
        child.send("count");
      }),
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.send("stop");
      await exited;
    },
  };
};

/** One HTTP heartbeat on a connection of its own, as RouterOS `/tool fetch` sends it: status and latency. */
const postOnNewConnection = (port: number, token: string): Promise<{ status: number; ms: number }> =>
  new Promise((resolve) => {
    const started = performance.now();
    const req = request(
      {
        host: "127.0.0.1",
        port,
        method: "POST",
        path: "/v1/heartbeat",
        agent: false,
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json", connection: "close" },
      },
      (res) => {
        res.resume();
        res.on("end", () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started }));
      },
    );
    req.on("error", () => resolve({ status: 0, ms: performance.now() - started }));
    req.end(HEARTBEAT);
  });

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
};

/** Routers beat over HTTP (new connection each time) and over one WebSocket, `rounds` times; every ack is timed. */
const routersBeat = async (h: DaemonHarness, rounds: number) => {
  const [viaHttp, viaWs] = await Promise.all([makeRouter(db, owner), makeRouter(db, owner)]);
  const started = performance.now();
  const ws = await connectOk(h.daemon.wsUrl, viaWs.heartbeatToken);
  const wsConnectMs = performance.now() - started;
  const http: Array<{ status: number; ms: number }> = [];
  const wsAcks: number[] = [];
  for (let i = 0; i < rounds; i++) {
    http.push(await postOnNewConnection(h.daemon.port, viaHttp.heartbeatToken));
    const sent = performance.now();
    ws.send(HEARTBEAT);
    expect(await ws.next()).toMatchObject({ type: "ack" });
    wsAcks.push(performance.now() - sent);
  }
  await ws.close();
  return { http, wsAcks, wsConnectMs, all: [...http.map((r) => r.ms), ...wsAcks, wsConnectMs] };
};

const report = (label: string, figures: Record<string, unknown>) =>
  // The figures of docs/operations.md "Heartbeat port connections"; printed, the assertions are above them.
  process.stderr.write(`[connection guard] ${label}: ${JSON.stringify(figures)}\n`);

describe("the heartbeat port serves routers first", () => {
  it("one address's thousands of idle, slow and probing connections: all but a few go within the limits, routers are acked within 2 s", async () => {
    const perAddress = 50;
    const h = await startDaemon({ waitingPerAddress: perAddress, evictWaitingAfterMs: 500 });
    const attacker = await attack(h.daemon.port, 3_000, 1);
    try {
      const beats = await routersBeat(h, 30);
      const heldWhileRoutersBeat = (await attacker.counts()).held;
      for (const r of beats.http) expect(r.status).toBe(200);
      for (const ms of beats.all) expect(ms).toBeLessThan(ACK_WITHIN_MS);
      // The address keeps only `perAddress` connections that waited past evictWaitingAfterMs.
      await eventually(async () => (await attacker.counts()).held <= perAddress, `at most ${perAddress} left`);
      report("one address", {
        opened: attacker.atStart.opened,
        heldAtStart: attacker.atStart.held,
        heldWhileRoutersBeat,
        heldAfter: (await attacker.counts()).held,
        ackP50Ms: Number(percentile(beats.all, 50).toFixed(1)),
        ackP99Ms: Number(percentile(beats.all, 99).toFixed(1)),
        ackMaxMs: Number(Math.max(...beats.all).toFixed(1)),
        wsConnectMs: Number(beats.wsConnectMs.toFixed(1)),
        guard: h.daemon.stats().guard,
      });
    } finally {
      await attacker.stop();
      await h.close();
    }
  });

  it("at the process's connection limit, held by many addresses, a router's connection takes the place of the idlest", async () => {
    const maxConnections = 2_000;
    // 40 addresses, 75 each: more than the limit, each address within its own allowance, and
    // deadlines long enough that the attackers hold the process full for the whole test.
    const h = await startDaemon({
      maxConnections,
      waitingPerAddress: 75,
      requestTimeoutMs: 60_000,
      unauthenticatedIdleMs: 60_000,
    });
    const attacker = await attack(h.daemon.port, 3_000, 40);
    try {
      // The kernel completes connections before the daemon accepts them: wait until it has.
      await eventually(() => h.daemon.stats().guard.open >= maxConnections - 5, "the process full of attackers");
      const beats = await routersBeat(h, 30);
      const heldWhileRoutersBeat = (await attacker.counts()).held;
      for (const r of beats.http) expect(r.status).toBe(200);
      for (const ms of beats.all) expect(ms).toBeLessThan(ACK_WITHIN_MS);
      const guard = h.daemon.stats().guard;
      expect(guard.open).toBeLessThanOrEqual(maxConnections);
      report("many addresses at the limit", {
        opened: attacker.atStart.opened,
        heldAtStart: attacker.atStart.held,
        heldWhileRoutersBeat,
        ackP50Ms: Number(percentile(beats.all, 50).toFixed(1)),
        ackP99Ms: Number(percentile(beats.all, 99).toFixed(1)),
        ackMaxMs: Number(Math.max(...beats.all).toFixed(1)),
        wsConnectMs: Number(beats.wsConnectMs.toFixed(1)),
        guard,
      });
    } finally {
      await attacker.stop();
      await h.close();
    }
  });

  it("closes a connection without a complete request at requestTimeoutMs and an idle one without a token at unauthenticatedIdleMs; a router's keep-alive stays", async () => {
    // Long enough that a stalled event loop (one for both ends, on a loaded machine) still reads
    // every request before its connection's deadline.
    const requestTimeoutMs = 1_500;
    const unauthenticatedIdleMs = 800;
    const h = await startDaemon({ requestTimeoutMs, unauthenticatedIdleMs });
    const router = await makeRouter(db, owner);
    try {
      const [silent, slow, probe, refused, beating] = await Promise.all(
        [1, 2, 3, 4, 5].map(() => openRaw(h.daemon.port)),
      );
      if (!silent || !slow || !probe || !refused || !beating) throw new Error("not connected");
      slow.socket.write("GET /livez HTTP/1.1\r\nHost: hb\r\nX-Slow: ");
      const drip = setInterval(() => slow.socket.write("a"), 50);
      // The client's clock reads late under load (one event loop for both ends): a close is timed
      // from before the request was sent (lower bound) and from when the answer was read (upper).
      const sent = new Map<Raw, number>();
      const answers = new Map<Raw, number>();
      const ask = (raw: Raw, text: string) =>
        new Promise<void>((resolve) => {
          raw.socket.once("data", () => {
            answers.set(raw, performance.now());
            resolve();
          });
          sent.set(raw, performance.now());
          raw.socket.write(text);
        });
      const post = (token: string) =>
        `POST /v1/heartbeat HTTP/1.1\r\nHost: hb\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${HEARTBEAT.length}\r\n\r\n${HEARTBEAT}`;
      await Promise.all([
        ask(probe, "GET /livez HTTP/1.1\r\nHost: hb\r\n\r\n"),
        ask(refused, post("hb_not_a_token_of_anyone_here_0000000000")),
        ask(beating, post(router.heartbeatToken)),
      ]);
      await Promise.all([silent.closed, slow.closed, probe.closed, refused.closed]);
      clearInterval(drip);
      const livedAtLeast = (raw: Raw) => (raw.closedAt ?? 0) - raw.openedAt;
      const livedAtMost = (raw: Raw) => (raw.closedAt ?? 0) - raw.startedAt;
      const sinceSent = (raw: Raw) => (raw.closedAt ?? 0) - (sent.get(raw) ?? 0);
      const sinceAnswer = (raw: Raw) => (raw.closedAt ?? 0) - (answers.get(raw) ?? 0);
      // Not before the limit, and not much after it (the guard looks every limit / 5).
      for (const raw of [silent, slow]) {
        expect(livedAtMost(raw)).toBeGreaterThanOrEqual(requestTimeoutMs - 5);
        expect(livedAtLeast(raw)).toBeLessThan(requestTimeoutMs + 1_000);
      }
      for (const raw of [probe, refused]) {
        expect(sinceSent(raw)).toBeGreaterThanOrEqual(unauthenticatedIdleMs - 5);
        expect(sinceAnswer(raw)).toBeLessThan(unauthenticatedIdleMs + 1_000);
      }
      // The router's kept-alive connection outlived them all and still takes heartbeats.
      expect(beating.closedAt).toBeNull();
      await ask(beating, post(router.heartbeatToken));
      expect(beating.closedAt).toBeNull();
      beating.socket.destroy();
    } finally {
      await h.close();
    }
  });

  it("closes a request whose body does not arrive within requestTimeoutMs, even with a valid token", async () => {
    const requestTimeoutMs = 600;
    const h = await startDaemon({ requestTimeoutMs });
    const router = await makeRouter(db, owner);
    try {
      const raw = await openRaw(h.daemon.port);
      raw.socket.write(
        `POST /v1/heartbeat HTTP/1.1\r\nHost: hb\r\nAuthorization: Bearer ${router.heartbeatToken}\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{`,
      );
      const drip = setInterval(() => raw.socket.write(" "), 50);
      await raw.closed;
      clearInterval(drip);
      expect((raw.closedAt ?? 0) - raw.startedAt).toBeGreaterThanOrEqual(requestTimeoutMs - 5);
      expect((raw.closedAt ?? 0) - raw.openedAt).toBeLessThan(requestTimeoutMs + 1_500);
    } finally {
      await h.close();
    }
  });
});
