import { acquireStatusFeed, type StatusFeedHandle } from "@fleet/db";
import { createTestDatabase, databaseFingerprint, makeRouter, makeUser, type TestDatabase } from "@fleet/db/testing";
import { HEARTBEAT_MAX_FRAME_BYTES, type TRouterStatusEvent } from "@fleet/shared";
import { eventually } from "@fleet/shared/testing";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { WebSocket } from "ws";
import {
  capturingLogger,
  connect,
  connectOk,
  type DaemonHarness,
  postHeartbeat,
  startDaemonHarness,
} from "../testing/daemon-harness.ts";
import { HeartbeatIntake } from "../heartbeats/heartbeat-intake.ts";

let db: TestDatabase;
let h: DaemonHarness;
let feed: StatusFeedHandle;
let owner: { organizationId: string; teamId: string };

const routerRow = async (id: string) =>
  (
    await db.query<Record<string, unknown>>(
      `select coalesce(has_pulse, false) as has_pulse, last_seen_at, last_seen_from, identity, serial_number, software_version,
         software_id, model, board_name, hardwareboard, uptime_seconds::int as uptime, tunnel_ip, reported_metadata
       from routers r left join router_liveness l on l.router_id = r.id where r.id = $1`,
      [id],
    )
  )[0];

/** A heartbeat whose JSON is exactly `bytes` long. */
const frameOfSize = (bytes: number): string => {
  const base = JSON.stringify({ type: "heartbeat", metadata: { pad: "" } });
  return JSON.stringify({ type: "heartbeat", metadata: { pad: "x".repeat(bytes - base.length) } });
};

beforeAll(async () => {
  db = await createTestDatabase();
  owner = await makeUser(db);
  h = await startDaemonHarness(db, { intervalMs: 1_000, missedHeartbeats: 3 });
  feed = await acquireStatusFeed(db);
});

afterAll(async () => {
  await h?.close();
  await feed?.release();
  await db?.close();
});

describe("WebSocket heartbeats", () => {
  it("a later heartbeat in the same batch keeps the fields an earlier one reported", async () => {
    const router = await makeRouter(db, owner, { identity: "" });
    const assigned = (await routerRow(router.id))?.tunnel_ip;
    const socket = await connectOk(h.daemon.wsUrl, router.heartbeatToken);
    socket.send({
      type: "heartbeat",
      identity: "edge-1",
      model: "hEX",
      tunnel_ip: "127.0.0.43",
      uptime: 10,
      metadata: { a: 1 },
    });
    socket.send({ type: "heartbeat", uptime: 11, metadata: { b: 2 } });
    expect(await socket.next()).toMatchObject({ type: "ack" });
    expect(await socket.next()).toMatchObject({ type: "ack" });
    await h.daemon.flush();
    const row = await routerRow(router.id);
    expect(row).toMatchObject({
      identity: "edge-1",
      model: "hEX",
      // The assigned address stays: a reported one is never written.
      tunnel_ip: assigned,
      uptime: 11,
      has_pulse: true,
    });
    expect(row?.reported_metadata).toMatchObject({ a: 1, b: 2 });
    await socket.close();
  });

  it("a quiet daemon writes a heartbeat within milliseconds, without an explicit flush", async () => {
    const router = await makeRouter(db, owner, { identity: "", hasPulse: false });
    const socket = await connectOk(h.daemon.wsUrl, router.heartbeatToken);
    socket.send({ type: "heartbeat", identity: "quick" });
    expect(await socket.next()).toMatchObject({ type: "ack" });
    // This harness runs no flush timer: only the quiet-daemon path can have written it.
    await eventually(async () => {
      const row = await routerRow(router.id);
      return row?.identity === "quick" && row?.has_pulse === true;
    }, "the quiet-daemon write");
    await socket.close();
  });

  it("acknowledges at once and writes the reported fields in the next flush", async () => {
    const router = await makeRouter(db, owner, { identity: "" });
    const assigned = (await routerRow(router.id))?.tunnel_ip;
    const socket = await connectOk(h.daemon.wsUrl, router.heartbeatToken);
    socket.send({
      type: "heartbeat",
      identity: "core-gw",
      serial_number: "HD0123",
      software_version: "7.16.1",
      software_id: "ABCD-1234",
      model: "RB5009UG+S+",
      board_name: "RB5009UG+S+",
      hardwareboard: true,
      uptime: 3_600.7,
      tunnel_ip: "127.0.0.42",
      metadata: { site: "HQ", rack: 3 },
    });
    expect(await socket.next()).toEqual({ type: "ack", interval_ms: 1_000 });
    // The ack does not wait for the write; the write follows within one flush.
    await h.daemon.flush();
    const row = await routerRow(router.id);
    expect(row).toMatchObject({
      has_pulse: true,
      last_seen_from: "127.0.0.1",
      identity: "core-gw",
      serial_number: "HD0123",
      software_version: "7.16.1",
      software_id: "ABCD-1234",
      model: "RB5009UG+S+",
      board_name: "RB5009UG+S+",
      hardwareboard: true,
      uptime: 3_600,
      tunnel_ip: assigned,
      reported_metadata: { site: "HQ", rack: 3 },
    });
    expect(new Date(String(row?.last_seen_at)).getTime()).toBe(h.clock.now().getTime());
    // Fields left out keep their values; metadata merges.
    socket.send({ type: "heartbeat", uptime: 3_630, metadata: { rack: 4 } });
    await socket.next();
    await h.daemon.flush();
    expect(await routerRow(router.id)).toMatchObject({
      identity: "core-gw",
      uptime: 3_630,
      reported_metadata: { site: "HQ", rack: 4 },
    });
    await socket.close();
  });

  it("refuses a wrong, missing or malformed token at the upgrade with 401, changing nothing", async () => {
    await makeRouter(db, owner);
    const before = await databaseFingerprint(db);
    for (const token of [`hb_${"0".repeat(32)}`, undefined, "short", "x".repeat(300), "hb_ with space"]) {
      const result = await connect(h.daemon.wsUrl, token);
      expect(result.ok).toBe(false);
      if (!result.ok) {
        expect(result.status).toBe(401);
        expect(JSON.parse(result.body)).toMatchObject({ type: "error" });
      }
    }
    const wrongPath = await connect(h.daemon.wsUrl.replace("/v1/heartbeat", "/v1/other"), "anything-long-enough");
    expect(wrongPath.ok ? 0 : wrongPath.status).toBe(404);
    await h.daemon.flush();
    expect(await databaseFingerprint(db)).toBe(before);
  });

  it("answers frames that are not JSON or not heartbeats with error frames and keeps the connection", async () => {
    const router = await makeRouter(db, owner);
    const socket = await connectOk(h.daemon.wsUrl, router.heartbeatToken);
    await h.daemon.flush();
    const before = await databaseFingerprint(db);
    const bad: Array<[string, RegExp]> = [
      ["{not json", /not valid JSON/],
      ["[1,2]", /JSON object/],
      ['"heartbeat"', /JSON object/],
      [JSON.stringify({ type: "hello" }), /type must be "heartbeat"/],
      [JSON.stringify({ uptime: 5 }), /type/],
      [JSON.stringify({ type: "heartbeat", uptime: "long" }), /uptime must be seconds or a RouterOS duration/],
      [JSON.stringify({ type: "heartbeat", uptime: -1 }), /uptime must be seconds/],
      [JSON.stringify({ type: "heartbeat", identity: { a: 1 } }), /identity must be a string/],
      [JSON.stringify({ type: "heartbeat", hardwareboard: "maybe" }), /hardwareboard must be true, false/],
      [JSON.stringify({ type: "heartbeat", identity: "x\u0000" }), /identity must not contain control characters/],
      [JSON.stringify({ type: "heartbeat", model: "\ud800" }), /model must not contain control characters/],
      [JSON.stringify({ type: "heartbeat", metadata: { a: ["ok", "\u0007"] } }), /metadata\.a\.1 must not contain/],
      [JSON.stringify({ type: "heartbeat", tunnel_ip: "10.0.0.300" }), /tunnel_ip must be an IPv4 or IPv6 address/],
      [JSON.stringify({ type: "heartbeat", metadata: [1] }), /metadata/],
      [JSON.stringify({ type: "heartbeat", model: "m".repeat(101) }), /model must be at most 100 characters/],
    ];
    for (const [frame, message] of bad) {
      socket.send(frame);
      const answer = (await socket.next()) as { type: string; message: string };
      expect(answer.type).toBe("error");
      expect(answer.message).toMatch(message);
    }
    socket.ws.send(Buffer.from([1, 2, 3]), { binary: true });
    expect(await socket.next()).toMatchObject({ type: "error", message: expect.stringMatching(/text frames/) });
    await h.daemon.flush();
    expect(await databaseFingerprint(db)).toBe(before);
    // Still open and working.
    socket.send({ type: "heartbeat" });
    expect(await socket.next()).toEqual({ type: "ack", interval_ms: 1_000 });
    await socket.close();
  });

  it("refuses JSON nested deeper than 32 levels with an error frame, keeps the socket, and survives 7,000 levels", async () => {
    const router = await makeRouter(db, owner);
    const socket = await connectOk(h.daemon.wsUrl, router.heartbeatToken);
    await h.daemon.flush();
    const before = await databaseFingerprint(db);
    // The attack: 14 KB, under the frame limit, metadata 7,000 arrays deep.
    const attack = `{"type":"heartbeat","metadata":{"a":${"[".repeat(7_000)}${"]".repeat(7_000)}}}`;
    expect(Buffer.byteLength(attack)).toBeLessThan(HEARTBEAT_MAX_FRAME_BYTES);
    socket.send(attack);
    expect(await socket.next()).toEqual({
      type: "error",
      message: expect.stringMatching(/metadata must not nest .* deeper than 32 levels/),
      errors: { metadata: [expect.stringMatching(/32 levels/)] },
    });
    // 33 levels (the frame is the first) are refused wherever they are; 32 pass.
    socket.send(`{"type":"heartbeat","metadata":{"a":${"[".repeat(31)}${"]".repeat(31)}}}`);
    expect(await socket.next()).toMatchObject({ type: "error", errors: { metadata: [expect.any(String)] } });
    socket.send(`{"type":"heartbeat","extra":${"[".repeat(32)}${"]".repeat(32)}}`);
    expect(await socket.next()).toMatchObject({ type: "error", errors: { extra: [expect.any(String)] } });
    await h.daemon.flush();
    expect(await databaseFingerprint(db)).toBe(before);
    socket.send(`{"type":"heartbeat","metadata":{"a":${"[".repeat(30)}${"]".repeat(30)}}}`);
    expect(await socket.next()).toMatchObject({ type: "ack" });
    await socket.close();
  });

  it("answers a frame whose handling throws with an error frame and keeps the socket", async () => {
    const router = await makeRouter(db, owner);
    const socket = await connectOk(h.daemon.wsUrl, router.heartbeatToken);
    const failing = vi.spyOn(HeartbeatIntake.prototype, "accept").mockImplementationOnce(() => {
      throw new Error("planted failure");
    });
    try {
      socket.send({ type: "heartbeat" });
      expect(await socket.next()).toEqual({ type: "error", message: expect.stringMatching(/Internal error/) });
    } finally {
      failing.mockRestore();
    }
    socket.send({ type: "heartbeat" });
    expect(await socket.next()).toEqual({ type: "ack", interval_ms: 1_000 });
    await socket.close();
  });

  it("accepts a frame of exactly 16 KiB and closes with 1009 on one byte more", async () => {
    const router = await makeRouter(db, owner);
    const socket = await connectOk(h.daemon.wsUrl, router.heartbeatToken);
    const exact = frameOfSize(HEARTBEAT_MAX_FRAME_BYTES);
    expect(Buffer.byteLength(exact)).toBe(16_384);
    socket.send(exact);
    expect(await socket.next()).toMatchObject({ type: "ack" });
    socket.send(frameOfSize(HEARTBEAT_MAX_FRAME_BYTES + 1));
    expect((await socket.closed).code).toBe(1009);
  });

  it("bounds a flood of frames from one router and stays healthy for the others", async () => {
    const flooder = await makeRouter(db, owner);
    const other = await makeRouter(db, owner);
    await h.daemon.flush();
    const flood = await connectOk(h.daemon.wsUrl, flooder.heartbeatToken);
    const frame = JSON.stringify({ type: "heartbeat" });
    const { floodBurst } = h.config.tuning;
    for (let i = 0; i < floodBurst + 1_000; i++) flood.ws.send(frame);
    const { code } = await flood.closed;
    expect(code).toBe(1008);
    const acks = flood.messages.filter((m) => (m as { type: string }).type === "ack").length;
    const errors = flood.messages.filter((m) => (m as { type: string }).type === "error");
    // The burst allowance plus what refilled while the frames arrived.
    expect(acks).toBeGreaterThanOrEqual(floodBurst);
    expect(acks).toBeLessThan(floodBurst + 200);
    expect(errors.length).toBeGreaterThanOrEqual(1);
    expect((errors[0] as { message: string }).message).toMatch(/Too many frames/);
    // One router, at most one pending row, whatever it sent.
    expect(h.daemon.stats().pending).toBeLessThanOrEqual(1);
    const socket = await connectOk(h.daemon.wsUrl, other.heartbeatToken);
    socket.send({ type: "heartbeat" });
    expect(await socket.next()).toMatchObject({ type: "ack" });
    const health = await fetch(`${h.daemon.url}/healthz`);
    expect(health.status).toBe(200);
    await socket.close();
  });

  it("closes a revoked router's sockets when the API says so, and refuses its token from then on", async () => {
    const router = await makeRouter(db, owner);
    const socket = await connectOk(h.daemon.wsUrl, router.heartbeatToken);
    socket.send({ type: "heartbeat" });
    await socket.next();
    await h.daemon.flush();
    // What DELETE /api/routers/{id} does: remove the row, then tell everyone.
    await db.query("delete from routers where id = $1", [router.id]);
    const event: TRouterStatusEvent = { type: "removed", router_id: router.id, team_id: owner.teamId };
    await feed.feed.publish([event]);
    const closed = await socket.closed;
    expect(closed.code).toBe(1008);
    expect(closed.reason).toMatch(/revoked/);
    const again = await connect(h.daemon.wsUrl, router.heartbeatToken);
    expect(again.ok ? 200 : again.status).toBe(401);
    expect((await postHeartbeat(h.daemon.url, router.heartbeatToken, { type: "heartbeat" })).status).toBe(401);
  });

  it("closes the sockets of a router deleted without notice at the next flush", async () => {
    const router = await makeRouter(db, owner);
    const socket = await connectOk(h.daemon.wsUrl, router.heartbeatToken);
    await db.query("delete from routers where id = $1", [router.id]);
    socket.send({ type: "heartbeat" });
    await socket.next();
    await h.daemon.flush();
    expect((await socket.closed).code).toBe(1008);
    const again = await connect(h.daemon.wsUrl, router.heartbeatToken);
    expect(again.ok ? 200 : again.status).toBe(401);
  });

  it("writes every acknowledged heartbeat when it shuts down gracefully", async () => {
    const own = await startDaemonHarness(db);
    const routers = await Promise.all([1, 2, 3].map(() => makeRouter(db, owner)));
    const sockets = await Promise.all(routers.map((r) => connectOk(own.daemon.wsUrl, r.heartbeatToken)));
    for (const [i, socket] of sockets.entries()) socket.send({ type: "heartbeat", identity: `last-words-${i}` });
    for (const socket of sockets) expect(await socket.next()).toMatchObject({ type: "ack" });
    // No flush: the acknowledged heartbeats are only in memory until close() writes them.
    await own.close();
    for (const socket of sockets) expect((await socket.closed).code).toBe(1001);
    for (const [i, router] of routers.entries()) {
      expect(await routerRow(router.id)).toMatchObject({ has_pulse: true, identity: `last-words-${i}` });
    }
  });

  it("pings a quiet peer and keeps it while it answers", async () => {
    const fast = await startDaemonHarness(db, { tuning: { pingIntervalMs: 50 } });
    try {
      const router = await makeRouter(db, owner);
      const socket = await connectOk(fast.daemon.wsUrl, router.heartbeatToken);
      let pings = 0;
      socket.ws.on("ping", () => {
        pings += 1;
      });
      // Quiet (no heartbeat), but its ws client answers every ping with a pong.
      await eventually(() => pings >= 3);
      expect(fast.daemon.connections()).toBe(1);
      socket.send({ type: "heartbeat" });
      expect(await socket.next()).toMatchObject({ type: "ack" });
      await socket.close();
    } finally {
      await fast.close();
    }
  });

  it("terminates a peer that stops answering pings", async () => {
    const fast = await startDaemonHarness(db, { tuning: { pingIntervalMs: 50 } });
    try {
      const router = await makeRouter(db, owner);
      const socket = await connectOk(fast.daemon.wsUrl, router.heartbeatToken);
      await eventually(() => fast.daemon.connections() === 1);
      // A peer whose machine froze: its TCP socket stays open but nothing is read or answered.
      const raw = (socket.ws as unknown as { _socket: import("node:net").Socket })._socket;
      raw.pause();
      socket.ws.pong = () => {};
      await eventually(() => fast.daemon.connections() === 0);
      raw.resume();
      expect((await socket.closed).code).toBe(1006);
    } finally {
      await fast.close();
    }
  });
});

describe("Connections per process", () => {
  /** One upgrade attempt: "open" (then closed again) or "closed" when the daemon cut it at accept. */
  const attempt = (wsUrl: string, token: string) =>
    new Promise<"open" | "closed">((resolve) => {
      const ws = new WebSocket(wsUrl, { headers: { authorization: `Bearer ${token}` } });
      ws.on("error", () => resolve("closed"));
      ws.on("close", () => resolve("closed"));
      ws.on("open", () => {
        resolve("open");
        ws.close();
      });
    });

  it("holds tuning.maxConnections sockets, closes one more at accept, and takes it once a socket goes", async () => {
    const { lines, logger } = capturingLogger("warn");
    const small = await startDaemonHarness(db, {
      intervalMs: 1_000,
      missedHeartbeats: 3,
      tuning: { maxConnections: 2 },
      logger,
    });
    try {
      const [a, b, c] = await Promise.all([1, 2, 3].map(() => makeRouter(db, owner)));
      if (!a || !b || !c) throw new Error("routers not made");
      const first = await connectOk(small.daemon.wsUrl, a.heartbeatToken);
      const second = await connectOk(small.daemon.wsUrl, b.heartbeatToken);
      expect(await attempt(small.daemon.wsUrl, c.heartbeatToken)).toBe("closed");
      expect(lines.filter((l) => String(l.msg).startsWith("connection limit")).length).toBe(1);
      // Both held sockets still work.
      second.send({ type: "heartbeat" });
      expect(await second.next()).toEqual({ type: "ack", interval_ms: 1_000 });
      await first.close();
      await eventually(async () => (await attempt(small.daemon.wsUrl, c.heartbeatToken)) === "open", "room again");
      await second.close();
    } finally {
      await small.close();
    }
  });
});

describe("HTTP heartbeats", () => {
  it("answers 200 with the same ack and writes like a WebSocket heartbeat", async () => {
    const router = await makeRouter(db, owner);
    const res = await postHeartbeat(h.daemon.url, router.heartbeatToken, {
      type: "heartbeat",
      identity: "fetch-router",
      uptime: 10,
    });
    expect(res).toEqual({ status: 200, body: { type: "ack", interval_ms: 1_000 } });
    await h.daemon.flush();
    expect(await routerRow(router.id)).toMatchObject({
      has_pulse: true,
      identity: "fetch-router",
      uptime: 10,
      last_seen_from: "127.0.0.1",
    });
  });

  it("refuses bad tokens, bad JSON, wrong types, oversized bodies and other methods, changing nothing", async () => {
    const router = await makeRouter(db, owner);
    await h.daemon.flush();
    const before = await databaseFingerprint(db);
    expect((await postHeartbeat(h.daemon.url, `hb_${"f".repeat(32)}`, { type: "heartbeat" })).status).toBe(401);
    expect((await postHeartbeat(h.daemon.url, undefined, { type: "heartbeat" })).status).toBe(401);
    const badJson = await postHeartbeat(h.daemon.url, router.heartbeatToken, "{oops");
    expect(badJson).toMatchObject({
      status: 400,
      body: { type: "error", message: expect.stringMatching(/not valid JSON/) },
    });
    const wrong = await postHeartbeat(h.daemon.url, router.heartbeatToken, { type: "heartbeat", uptime: "x" });
    expect(wrong).toMatchObject({ status: 422, body: { type: "error", message: expect.stringMatching(/uptime/) } });
    const nul = await postHeartbeat(h.daemon.url, router.heartbeatToken, { type: "heartbeat", identity: "x\u0000" });
    expect(nul).toMatchObject({ status: 422, body: { type: "error", errors: { identity: [expect.any(String)] } } });
    const meta = await postHeartbeat(h.daemon.url, router.heartbeatToken, {
      type: "heartbeat",
      metadata: { site: { note: "\u001b[31m" } },
    });
    expect(meta).toMatchObject({ status: 422, body: { errors: { "metadata.site.note": [expect.any(String)] } } });
    const deep = await postHeartbeat(
      h.daemon.url,
      router.heartbeatToken,
      `{"type":"heartbeat","metadata":{"a":${"[".repeat(7_000)}${"]".repeat(7_000)}}}`,
    );
    expect(deep).toMatchObject({ status: 422, body: { type: "error", errors: { metadata: [expect.any(String)] } } });
    expect(
      (await postHeartbeat(h.daemon.url, router.heartbeatToken, frameOfSize(HEARTBEAT_MAX_FRAME_BYTES + 1))).status,
    ).toBe(413);
    const get = await fetch(`${h.daemon.url}/v1/heartbeat`);
    expect(get.status).toBe(405);
    expect((await fetch(`${h.daemon.url}/nope`)).status).toBe(404);
    await h.daemon.flush();
    expect(await databaseFingerprint(db)).toBe(before);
    expect(
      (await postHeartbeat(h.daemon.url, router.heartbeatToken, frameOfSize(HEARTBEAT_MAX_FRAME_BYTES))).status,
    ).toBe(200);
  });

  it("reports health: livez, readyz and healthz", async () => {
    for (const path of ["/healthz", "/livez", "/readyz"]) {
      const res = await fetch(`${h.daemon.url}${path}`);
      expect(res.status, path).toBe(200);
      expect(await res.json()).toEqual({ status: "ok" });
    }
  });
});
