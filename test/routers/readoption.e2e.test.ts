import { startTestSystem, type TestSystem } from "@fleet/all-in-one/testing";
import { loadAllInOneConfig } from "@fleet/all-in-one";
import { type Database, openDatabase } from "@fleet/db";
import { createTestDatabase, type TestDatabase } from "@fleet/db/testing";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { testSystemEnv } from "../support/system-env.ts";

/**
 * docs/routeros.md "Adoption": `POST /api/routers/{id}/adoption` replaces the heartbeat token, and
 * the old one stops working at once in EVERY daemon process. Two systems on one database stand for
 * two processes (on PostgreSQL each has its own pool and its own LISTEN connection, so the notice
 * really travels between them; on PGlite they share the in-process feed). A stolen or stale device
 * holds a socket on each daemon and posts over HTTP to each.
 */
const INTERVAL_MS = 1_000;
const CLOSE_WITHIN_MS = 2_000;

let db: TestDatabase;
let secondDb: Database | undefined;
let a: TestSystem;
let b: TestSystem;
let accessToken: string;

const api = async (method: string, path: string, body?: unknown) => {
  const res = await fetch(`${a.api.url}${path}`, {
    method,
    headers: {
      ...(accessToken ? { authorization: `Bearer ${accessToken}` } : {}),
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
};

const heartbeat = (identity: string) => ({ type: "heartbeat", identity, uptime: 60 });

const post = async (baseUrl: string, token: string, body: object) => {
  const res = await fetch(`${baseUrl}/v1/heartbeat`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  await res.text();
  return res.status;
};

interface Socket {
  ws: WebSocket;
  next(): Promise<unknown>;
  closed: Promise<{ code: number; at: number }>;
}

/** Opens a heartbeat socket; resolves with the refusal status instead when the upgrade is refused. */
const open = (wsUrl: string, token: string): Promise<Socket | number> =>
  new Promise((resolve, reject) => {
    const ws = new WebSocket(wsUrl, { headers: { authorization: `Bearer ${token}` } });
    const messages: unknown[] = [];
    const waiters: Array<(m: unknown) => void> = [];
    ws.on("message", (data) => {
      const message = JSON.parse(data.toString());
      const waiter = waiters.shift();
      if (waiter) waiter(message);
      else messages.push(message);
    });
    const closed = new Promise<{ code: number; at: number }>((done) =>
      ws.on("close", (code) => done({ code, at: performance.now() })),
    );
    ws.on("error", () => {});
    ws.once("unexpected-response", (_req, res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    ws.once("open", () =>
      resolve({
        ws,
        closed,
        next: () =>
          new Promise((done) => {
            if (messages.length > 0) done(messages.shift());
            else waiters.push(done);
          }),
      }),
    );
    setTimeout(() => reject(new Error("socket did not open")), 10_000).unref();
  });

const openOk = async (wsUrl: string, token: string): Promise<Socket> => {
  const socket = await open(wsUrl, token);
  if (typeof socket === "number") throw new Error(`upgrade refused: ${socket}`);
  return socket;
};

const routerRow = async (id: string) =>
  (
    await db.query<{ identity: string; last_seen_at: Date | null; has_pulse: boolean }>(
      "select identity, last_seen_at, coalesce(has_pulse, false) as has_pulse from routers r left join router_liveness l on l.router_id = r.id where r.id = $1",
      [id],
    )
  )[0];

/** `promise`, or a failure naming `what` after `ms` (a close that never comes fails here, not at the test's timeout). */
const within = <T>(promise: Promise<T>, ms: number, what: string): Promise<T> =>
  Promise.race([
    promise,
    new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`${what} not within ${ms} ms`)), ms).unref()),
  ]);

const flushBoth = async () => {
  await a.heartbeat.flush();
  await b.heartbeat.flush();
};

beforeAll(async () => {
  db = await createTestDatabase();
  // PostgreSQL: the second system gets a database handle of its own, as another process would.
  secondDb = db.url ? await openDatabase({ databaseUrl: db.url, dataDir: "memory", poolSize: 4 }) : undefined;
  const env = testSystemEnv({
    HEARTBEAT_INTERVAL_MS: String(INTERVAL_MS),
    TUNNEL_RECONCILE_INTERVAL_MS: "86400000",
    // No fault opens however slow the machine: the test compares has_pulse before and after.
    MISSED_HEARTBEATS: "1000",
  });
  const logger = pino({ level: "silent" });
  a = await startTestSystem({ config: loadAllInOneConfig(env), logger, db });
  b = await startTestSystem({ config: loadAllInOneConfig(env), logger, db: secondDb ?? db });
  const email = `readopt-${crypto.randomUUID()}@example.com`;
  accessToken = (await api("POST", "/v1/auth/dev-login", { email })).body.access_token;
  expect((await api("POST", "/v1/account", { name: "Readopt", email, address: { country: "US" } })).status).toBe(201);
});

afterAll(async () => {
  await b?.close();
  await a?.close();
  await secondDb?.close();
  await db?.close();
});

describe("re-adoption replaces the heartbeat token in every daemon process", () => {
  it("closes the old token's sockets within 2 s, refuses it over HTTP and WebSocket, writes nothing and leaves the new URL unspent", async () => {
    const enrolled = await api("POST", "/api/routers", { name: "Reset site" });
    expect(enrolled.status).toBe(201);
    const routerId: string = enrolled.body.data.router.id;
    const oldToken: string = enrolled.body.data.heartbeat_token;
    const daemons = [a.heartbeat, b.heartbeat];

    // The device is known to both processes: a socket on each and an HTTP heartbeat to each (cached).
    const sockets = await Promise.all(daemons.map((d) => openOk(d.wsUrl, oldToken)));
    for (const socket of sockets) {
      socket.ws.send(JSON.stringify(heartbeat("before")));
      expect(await socket.next()).toEqual({ type: "ack", interval_ms: INTERVAL_MS });
    }
    for (const d of daemons) expect(await post(d.url, oldToken, heartbeat("before"))).toBe(200);
    await flushBoth();
    const before = await routerRow(routerId);
    expect(before?.identity).toBe("before");

    const reissued = await api("POST", `/api/routers/${routerId}/adoption`);
    expect(reissued.status).toBe(201);
    const answeredAt = performance.now();
    const newUrl: string = reissued.body.data.url;

    // At once, the stale device beats with the old token on every path, with a spoofed identity.
    for (const socket of sockets) socket.ws.send(JSON.stringify(heartbeat("spoofed")));
    const immediate = await Promise.all(daemons.map((d) => post(d.url, oldToken, heartbeat("spoofed"))));
    if (!db.url) {
      // One process's feed is synchronous: the notice is heard before the API answers.
      expect(immediate).toEqual([401, 401]);
    }

    // Every socket opened with the old token is closed (policy, 1008) within 2 s.
    const closed = await within(Promise.all(sockets.map((s) => s.closed)), 5 * CLOSE_WITHIN_MS, "both sockets closed");
    for (const close of closed) {
      expect(close.code).toBe(1008);
      expect(close.at - answeredAt).toBeLessThan(CLOSE_WITHIN_MS);
    }
    // From now on, every process refuses the old token: 401 over HTTP and at the upgrade.
    for (const d of daemons) {
      expect(await post(d.url, oldToken, heartbeat("spoofed"))).toBe(401);
      expect(await open(d.wsUrl, oldToken)).toBe(401);
    }

    // Nothing the old token sent after the re-adoption was written, whatever was acknowledged.
    await flushBoth();
    const after = await routerRow(routerId);
    expect(after).toEqual(before);
    // ... so the new adoption URL is still unspent for the reset router.
    expect((await fetch(newUrl)).status).toBe(200);

    // The new token (from the script) works on both processes and spends the URL.
    const script = await (await fetch(newUrl)).text();
    const newToken = /Bearer (hb_[A-Za-z0-9_-]+),/.exec(script)?.[1] ?? "";
    expect(newToken).not.toBe("");
    expect(newToken).not.toBe(oldToken);
    for (const d of daemons) expect(await post(d.url, newToken, heartbeat("after reset"))).toBe(200);
    const fresh = await openOk(b.heartbeat.wsUrl, newToken);
    fresh.ws.send(JSON.stringify(heartbeat("after reset")));
    expect(await fresh.next()).toEqual({ type: "ack", interval_ms: INTERVAL_MS });
    fresh.ws.close();
    await flushBoth();
    expect((await routerRow(routerId))?.identity).toBe("after reset");
  });
});
