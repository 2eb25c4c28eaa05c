import { startTestSystem, type TestSystem } from "@fleet/all-in-one/testing";
import { eventually } from "@fleet/shared/testing";

import { createClient } from "@fleet/api/client";
import { EventSource } from "eventsource";
import { createTestDatabase, type TestDatabase } from "@fleet/db/testing";
import { ManualClock, type TRouterStatusEvent } from "@fleet/shared";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { loadAllInOneConfig } from "@fleet/all-in-one";
import { testSystemEnv } from "../support/system-env.ts";

/**
 * A router's life through the whole system over the wire: enrolled through the API, beating over
 * WebSocket to the daemon, seen as online, silent long enough for a fault (pushed to a tRPC
 * subscriber), back again, deleted, and refused from then on. Domain time is a ManualClock; the
 * daemon's sweep is driven by hand at the moments the state table names.
 */
let db: TestDatabase;
let system: TestSystem;
const clock = new ManualClock(new Date());
const INTERVAL = 30_000;
const MISSED = 10;

const api = async (method: string, path: string, token: string, body?: unknown) => {
  const res = await fetch(`${system.api.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
};

const open = (token: string) =>
  new Promise<{ ws: WebSocket; next: () => Promise<unknown>; closed: Promise<number> } | number>((resolve) => {
    const ws = new WebSocket(system.heartbeat.wsUrl, { headers: { authorization: `Bearer ${token}` } });
    const inbox: unknown[] = [];
    const waiting: Array<(m: unknown) => void> = [];
    const closed = new Promise<number>((done) => ws.on("close", (code) => done(code)));
    ws.on("error", () => {});
    ws.on("message", (data) => {
      const message = JSON.parse(data.toString());
      const waiter = waiting.shift();
      if (waiter) waiter(message);
      else inbox.push(message);
    });
    ws.once("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
    ws.once("open", () =>
      resolve({
        ws,
        closed,
        next: () => new Promise((done) => (inbox.length > 0 ? done(inbox.shift()) : waiting.push(done))),
      }),
    );
  });

beforeAll(async () => {
  db = await createTestDatabase();
  const config = loadAllInOneConfig({
    ...testSystemEnv(),
    HEARTBEAT_INTERVAL_MS: String(INTERVAL),
    MISSED_HEARTBEATS: String(MISSED),
    ENTRY_POINT_PORTS: "63300-63309",
  });
  system = await startTestSystem({ config, logger: pino({ level: "silent" }), db, clock });
});

afterAll(async () => {
  await system?.close();
  await db?.close();
});

describe("a router's life", () => {
  it("enrolls, beats, faults, recovers, and is refused after DELETE", async () => {
    const login = await fetch(`${system.api.url}/v1/auth/dev-login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: `e2e-${crypto.randomUUID()}@example.com` }),
    }).then((r) => r.json() as Promise<{ access_token: string }>);
    const token: string = login.access_token;
    expect((await api("POST", "/api/routers", token, { name: "Lab" })).status).toBe(402);
    expect(
      (
        await api("POST", "/v1/account", token, {
          name: "Lab Ltd",
          email: "billing@lab.example",
          address: { country: "DE" },
        })
      ).status,
    ).toBe(201);
    const enrolled = await api("POST", "/api/routers", token, { name: "Lab" });
    expect(enrolled.status).toBe(201);
    const routerId: string = enrolled.body.data.router.id;
    const heartbeatToken: string = enrolled.body.data.heartbeat_token;

    const events: TRouterStatusEvent[] = [];
    let started = false;
    const client = createClient({ url: system.api.url, token, EventSource });
    const subscription = client.routers.onStatus.subscribe(undefined, {
      onStarted: () => {
        started = true;
      },
      onData: (e) => events.push(e),
    });
    await eventually(() => started, "the subscription to start");

    const socket = await open(heartbeatToken);
    if (typeof socket === "number") throw new Error(`upgrade refused: ${socket}`);
    const lastBeat = clock.now().getTime();
    socket.ws.send(JSON.stringify({ type: "heartbeat", identity: "lab-gw", uptime: 50_000, model: "CCR2004-16G-2S+" }));
    expect(await socket.next()).toEqual({ type: "ack", interval_ms: INTERVAL });
    await system.heartbeat.flush();
    const listed = await api("GET", "/api/routers", token);
    expect(listed.body.data[0]).toMatchObject({
      id: routerId,
      identity: "lab-gw",
      has_pulse: true,
      last_seen: "just now",
      model: "CCR2004-16G-2S+",
    });
    await eventually(() => events.some((e) => e.type === "pulse" && e.has_pulse), "a pulse");

    // Ten missed heartbeats: 5 minutes at 30 s, and the sweeper's grace (twice the longest a
    // heartbeat waits for its flush: the steady flush, 1 s at a 30 s interval).
    clock.set(new Date(lastBeat + MISSED * INTERVAL + 2 * 1_000 + 1));
    await system.heartbeat.sweep();
    expect((await api("GET", "/api/routers", token)).body.data[0].has_pulse).toBe(false);
    const ongoing = (await api("GET", `/api/routers/${routerId}/faults`, token)).body.data;
    expect(ongoing).toEqual([
      expect.objectContaining({
        rid: routerId,
        message: "Site Offline: lab-gw",
        cause: "Unknown",
        status: "ongoing",
        resolved_at: null,
        duration: null,
      }),
    ]);
    expect(ongoing[0].created_at).toBe(new Date(lastBeat + INTERVAL).toISOString().replace(/\.\d+Z$/, "+00:00"));
    await eventually(() => events.some((e) => e.type === "fault" && e.fault.status === "ongoing"), "an ongoing fault");

    // Back after 20 minutes with a fresh uptime: it rebooted.
    clock.set(new Date(lastBeat + 20 * 60_000));
    socket.ws.send(JSON.stringify({ type: "heartbeat", uptime: 60 }));
    await socket.next();
    await system.heartbeat.flush();
    const done = (await api("GET", `/api/routers/${routerId}/faults`, token)).body.data[0];
    expect(done).toMatchObject({
      status: "completed",
      cause: "Router rebooted",
      duration: (20 * 60_000 - INTERVAL) / 1000,
    });
    await eventually(
      () => events.some((e) => e.type === "fault" && e.fault.status === "completed"),
      "the completed fault",
    );
    subscription.unsubscribe();

    expect((await api("DELETE", `/api/routers/${routerId}`, token)).status).toBe(204);
    expect(await socket.closed).toBe(1008);
    expect(await open(heartbeatToken)).toBe(401);
    const post = await fetch(`${system.heartbeat.url}/v1/heartbeat`, {
      method: "POST",
      headers: { authorization: `Bearer ${heartbeatToken}`, "content-type": "application/json" },
      body: JSON.stringify({ type: "heartbeat" }),
    });
    expect(post.status).toBe(401);
  });
});
