import { createTestDatabase, makeRouter, makeUser, type TestDatabase } from "@fleet/db/testing";
import { ManualClock } from "@fleet/shared";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  capturingLogger,
  connectOk,
  type DaemonHarness,
  postHeartbeat,
  startDaemonHarness,
} from "../testing/daemon-harness.ts";
import { TUNNEL_CLAIM_LOG_PERIOD_MS } from "./tunnel-claims.ts";

let db: TestDatabase;
let h: DaemonHarness;
let owner: { organizationId: string; teamId: string };
const log = capturingLogger();
const clock = new ManualClock();

const tunnelIp = async (id: string) =>
  (await db.query<{ tunnel_ip: string | null }>("select tunnel_ip from routers where id = ?", [id]))[0]?.tunnel_ip;
const securityEvents = (routerId: string) =>
  log.lines.filter((l) => l.event === "tunnel_ip_mismatch" && l.routerId === routerId);

beforeAll(async () => {
  db = await createTestDatabase();
  owner = await makeUser(db);
  h = await startDaemonHarness(db, { intervalMs: 1_000, logger: log.logger, clock });
});

afterAll(async () => {
  await h?.close();
  await db?.close();
});

describe('a reported tunnel_ip (docs/api.md "Routers and heartbeats")', () => {
  it("another router's address changes nothing and is logged as a security event once per router per hour", async () => {
    const victim = await makeRouter(db, owner, { tunnelIp: "127.0.0.61" });
    const claimant = await makeRouter(db, owner, { tunnelIp: "127.0.0.62" });
    const socket = await connectOk(h.daemon.wsUrl, claimant.heartbeatToken);
    socket.send({ type: "heartbeat", identity: "claimant", tunnel_ip: "127.0.0.61" });
    expect(await socket.next()).toMatchObject({ type: "ack" });
    // The same claim over HTTP, and again and again: still one log line.
    for (let n = 0; n < 3; n++) {
      expect(
        (await postHeartbeat(h.daemon.url, claimant.heartbeatToken, { type: "heartbeat", tunnel_ip: "127.0.0.1" }))
          .status,
      ).toBe(200);
    }
    await h.daemon.flush();
    expect(await tunnelIp(claimant.id)).toBe("127.0.0.62");
    expect(await tunnelIp(victim.id)).toBe("127.0.0.61");
    const events = securityEvents(claimant.id);
    expect(events).toEqual([
      expect.objectContaining({
        level: 40,
        routerId: claimant.id,
        reportedTunnelIp: "127.0.0.61",
        assignedTunnelIp: "127.0.0.62",
      }),
    ]);

    clock.advance(TUNNEL_CLAIM_LOG_PERIOD_MS - 1);
    socket.send({ type: "heartbeat", tunnel_ip: "127.0.0.61" });
    await socket.next();
    expect(securityEvents(claimant.id)).toHaveLength(1);
    clock.advance(1);
    socket.send({ type: "heartbeat", tunnel_ip: "::ffff:127.0.0.1" });
    await socket.next();
    expect(securityEvents(claimant.id)).toHaveLength(2);
    expect(securityEvents(claimant.id)[1]).toMatchObject({ reportedTunnelIp: "127.0.0.1" });
    await socket.close();
  });

  it("the assigned address itself (in any spelling) is no event; a router without one that reports one is", async () => {
    const router = await makeRouter(db, owner, { tunnelIp: "127.0.0.63" });
    for (const reported of ["127.0.0.63", "::ffff:127.0.0.63"]) {
      expect(
        (await postHeartbeat(h.daemon.url, router.heartbeatToken, { type: "heartbeat", tunnel_ip: reported })).status,
      ).toBe(200);
    }
    expect(securityEvents(router.id)).toHaveLength(0);

    const unassigned = await makeRouter(db, owner, { tunnelIp: null });
    expect(
      (await postHeartbeat(h.daemon.url, unassigned.heartbeatToken, { type: "heartbeat", tunnel_ip: "127.0.0.64" }))
        .status,
    ).toBe(200);
    await h.daemon.flush();
    expect(await tunnelIp(unassigned.id)).toBeNull();
    expect(securityEvents(unassigned.id)).toEqual([
      expect.objectContaining({ assignedTunnelIp: null, reportedTunnelIp: "127.0.0.64" }),
    ]);
  });
});
