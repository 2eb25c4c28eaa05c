import { acquireStatusFeed, AdoptionsRepository, type StatusFeedHandle } from "@fleet/db";
import { createTestDatabase, makeRouter, makeUser, type TestDatabase } from "@fleet/db/testing";
import { generateWireguardKeyPair, ManualClock, type TRouterStatusEvent } from "@fleet/shared";
import { eventually } from "@fleet/shared/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  capturingLogger,
  connectOk,
  type DaemonHarness,
  postHeartbeat,
  startDaemonHarness,
} from "../testing/daemon-harness.ts";
import { WIREGUARD_KEY_LOG_PERIOD_MS } from "./wireguard-binder.ts";

let db: TestDatabase;
let h: DaemonHarness;
let feed: StatusFeedHandle;
let owner: { organizationId: string; teamId: string };
const log = capturingLogger();
const clock = new ManualClock();
const events: TRouterStatusEvent[] = [];

const keyOf = async (routerId: string) =>
  (
    await db.query<{ public_key: string }>("select public_key from router_wireguard_peers where router_id = $1", [
      routerId,
    ])
  )[0]?.public_key ?? null;
const security = (routerId: string) =>
  log.lines.filter(
    (l) =>
      typeof l.event === "string" && l.event.startsWith("wireguard_key_") && l.level === 40 && l.routerId === routerId,
  );
const beat = (token: string, body: object) => postHeartbeat(h.daemon.url, token, { type: "heartbeat", ...body });
const newKey = () => generateWireguardKeyPair().publicKey;

beforeAll(async () => {
  db = await createTestDatabase();
  owner = await makeUser(db);
  h = await startDaemonHarness(db, { intervalMs: 1_000, logger: log.logger, clock });
  feed = await acquireStatusFeed(db);
  feed.feed.subscribe((event) => events.push(event));
});

afterAll(async () => {
  await feed?.release();
  await h?.close();
  await db?.close();
});

describe('binding a router\'s WireGuard key (docs/routeros.md "The management tunnel")', () => {
  it("the first heartbeat with a key binds it and announces it; repeating it changes nothing", async () => {
    const router = await makeRouter(db, owner);
    const key = newKey();
    expect((await beat(router.heartbeatToken, { wireguard_public_key: key })).status).toBe(200);
    expect(await eventually(() => keyOf(router.id), "the binding")).toBe(key);
    await eventually(() => events.some((e) => e.type === "tunnel_binding" && e.router_id === router.id), "the event");
    // Over WebSocket too; the same key again is no new binding and no event.
    const socket = await connectOk(h.daemon.wsUrl, router.heartbeatToken);
    socket.send({ type: "heartbeat", wireguard_public_key: key });
    expect(await socket.next()).toMatchObject({ type: "ack" });
    await socket.close();
    expect(events.filter((e) => e.router_id === router.id)).toHaveLength(1);
    expect(security(router.id)).toEqual([]);
  });

  it("a different key later changes nothing and is a security event, once per router per hour", async () => {
    const router = await makeRouter(db, owner);
    const key = newKey();
    await beat(router.heartbeatToken, { wireguard_public_key: key });
    await eventually(() => keyOf(router.id), "the binding");
    // The binder sets the cached key once its bind is done; wait for that before changing key.
    await eventually(async () => {
      await beat(router.heartbeatToken, { wireguard_public_key: newKey() });
      return security(router.id).length > 0;
    }, "the security event");
    for (let n = 0; n < 3; n++)
      expect((await beat(router.heartbeatToken, { wireguard_public_key: newKey() })).status).toBe(200);
    expect(await keyOf(router.id)).toBe(key);
    expect(security(router.id)).toEqual([
      expect.objectContaining({ level: 40, event: "wireguard_key_changed", boundKey: key }),
    ]);
    clock.advance(WIREGUARD_KEY_LOG_PERIOD_MS);
    await beat(router.heartbeatToken, { wireguard_public_key: newKey() });
    expect(security(router.id)).toHaveLength(2);
    expect(await keyOf(router.id)).toBe(key);
  });

  it("a key bound to another router is ignored and logged; neither binding moves", async () => {
    const victim = await makeRouter(db, owner);
    const thief = await makeRouter(db, owner);
    const key = newKey();
    await beat(victim.heartbeatToken, { wireguard_public_key: key });
    await eventually(() => keyOf(victim.id), "the victim's binding");
    expect((await beat(thief.heartbeatToken, { wireguard_public_key: key })).status).toBe(200);
    await eventually(() => security(thief.id).length > 0, "the security event");
    expect(security(thief.id)[0]).toMatchObject({ event: "wireguard_key_taken" });
    expect(await keyOf(thief.id)).toBeNull();
    expect(await keyOf(victim.id)).toBe(key);
  });

  it("a malformed key is refused (422 naming the field, an error frame) and binds nothing", async () => {
    const router = await makeRouter(db, owner);
    const key = newKey();
    for (const bad of [key.slice(0, 43), `${key}=`, `${key.slice(0, 42)}B=`, 42, "x".repeat(10_000), `${key}\n`]) {
      const res = await beat(router.heartbeatToken, { wireguard_public_key: bad });
      expect(res.status).toBe(422);
      expect(res.body.errors).toHaveProperty("wireguard_public_key");
    }
    const socket = await connectOk(h.daemon.wsUrl, router.heartbeatToken);
    socket.send({ type: "heartbeat", wireguard_public_key: "not-a-key" });
    expect(await socket.next()).toMatchObject({ type: "error", errors: { wireguard_public_key: expect.any(Array) } });
    await socket.close();
    await h.daemon.flush();
    expect(await keyOf(router.id)).toBeNull();
  });

  it("re-adoption clears the binding: the next heartbeat with the new token binds the device's key then", async () => {
    const router = await makeRouter(db, owner);
    const first = newKey();
    await beat(router.heartbeatToken, { wireguard_public_key: first });
    await eventually(() => keyOf(router.id), "the binding");
    const newToken = `hb_${crypto.randomUUID().replaceAll("-", "")}`;
    const { createHash } = await import("node:crypto");
    const reissued = await db.transaction((query) =>
      new AdoptionsRepository(query).reissue(
        owner.teamId,
        router.id,
        createHash("sha256").update(newToken).digest("hex"),
        {
          tokenHash: "a".repeat(64),
          createdAt: new Date(),
          expiresAt: new Date(Date.now() + 3_600_000),
          countsFrom: new Date(),
        },
      ),
    );
    expect(reissued).toBe(true);
    expect(await keyOf(router.id)).toBeNull();
    const second = newKey();
    expect((await beat(newToken, { wireguard_public_key: second })).status).toBe(200);
    expect(await eventually(() => keyOf(router.id), "the new binding")).toBe(second);
  });
});
