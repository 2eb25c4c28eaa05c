import { createTestDatabase, databaseFingerprint, makeRouter, makeUser, type TestDatabase } from "@fleet/db/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectOk, type DaemonHarness, postHeartbeat, startDaemonHarness } from "../testing/daemon-harness.ts";

let db: TestDatabase;
let h: DaemonHarness;
let owner: { organizationId: string; teamId: string };

const W = 604_800;
const D = 86_400;

const routerRow = async (id: string) =>
  (
    await db.query<Record<string, unknown>>(
      `select identity, serial_number, software_version, software_id, hardwareboard, uptime_seconds::int as uptime
       from routers r left join router_liveness l on l.router_id = r.id where r.id = $1`,
      [id],
    )
  )[0];

beforeAll(async () => {
  db = await createTestDatabase();
  owner = await makeUser(db);
  h = await startDaemonHarness(db, { intervalMs: 1_000 });
});

afterAll(async () => {
  await h?.close();
  await db?.close();
});

describe('RouterOS-native heartbeat values (docs/api.md "Routers and heartbeats")', () => {
  it("WebSocket: a duration uptime, string booleans and serialized floats are written as plain values", async () => {
    const router = await makeRouter(db, owner, { identity: "" });
    const socket = await connectOk(h.daemon.wsUrl, router.heartbeatToken);
    // As `:serialize to=json` writes it: the serial number "123456" became a float.
    socket.send(
      '{"type":"heartbeat","identity":"edge","serial_number":123456.000000,"hardwareboard":"yes","uptime":"1w2d03:04:05"}',
    );
    expect(await socket.next()).toEqual({ type: "ack", interval_ms: 1_000 });
    await h.daemon.flush();
    expect(await routerRow(router.id)).toMatchObject({
      identity: "edge",
      serial_number: "123456",
      hardwareboard: true,
      uptime: W + 2 * D + 3 * 3_600 + 4 * 60 + 5,
    });

    // A malformed duration: an error frame naming uptime, the socket stays open, nothing written.
    const before = await databaseFingerprint(db);
    socket.send({ type: "heartbeat", identity: "changed", uptime: "1d2" });
    expect(await socket.next()).toEqual({
      type: "error",
      message: expect.stringMatching(/uptime/),
      errors: { uptime: [expect.stringMatching(/RouterOS duration/)] },
    });
    await h.daemon.flush();
    expect(await databaseFingerprint(db)).toBe(before);
    socket.send({ type: "heartbeat", uptime: "0s", hardwareboard: "no" });
    expect(await socket.next()).toMatchObject({ type: "ack" });
    await h.daemon.flush();
    expect(await routerRow(router.id)).toMatchObject({ identity: "edge", uptime: 0, hardwareboard: false });
    await socket.close();
  });

  it("HTTP: the body a RouterOS scheduler posts is accepted; a malformed duration is 422 naming uptime", async () => {
    const router = await makeRouter(db, owner, { identity: "" });
    // Byte for byte what `:serialize to=json` makes of the script's array (keys sorted, floats with six decimals).
    const body =
      '{"board_name":"CHR","hardwareboard":"false","identity":"chr-1","model":"CHR","serial_number":null,' +
      '"software_id":"AB12-CD34","software_version":7.160000,"type":"heartbeat","uptime":"3d14:05:00"}';
    const res = await postHeartbeat(h.daemon.url, router.heartbeatToken, body);
    expect(res).toEqual({ status: 200, body: { type: "ack", interval_ms: 1_000 } });
    await h.daemon.flush();
    expect(await routerRow(router.id)).toMatchObject({
      identity: "chr-1",
      software_version: "7.16",
      software_id: "AB12-CD34",
      hardwareboard: false,
      uptime: 3 * D + 14 * 3_600 + 5 * 60,
    });

    const before = await databaseFingerprint(db);
    for (const uptime of ["1w1w", "00:60:00", "-5", "soon", true]) {
      const refused = await postHeartbeat(h.daemon.url, router.heartbeatToken, {
        type: "heartbeat",
        identity: "changed",
        uptime,
      });
      expect(refused).toEqual({
        status: 422,
        body: { type: "error", message: expect.stringMatching(/uptime/), errors: { uptime: [expect.any(String)] } },
      });
    }
    await h.daemon.flush();
    expect(await databaseFingerprint(db)).toBe(before);
  });
});
