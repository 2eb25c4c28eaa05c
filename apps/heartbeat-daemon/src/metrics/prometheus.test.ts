import { createTestDatabase, makeRouter, makeUser, type TestDatabase } from "@fleet/db/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectOk, type DaemonHarness, postHeartbeat, startDaemonHarness } from "../testing/daemon-harness.ts";

const TOKEN = "hb-metrics-token";
let db: TestDatabase;
let h: DaemonHarness;

beforeAll(async () => {
  db = await createTestDatabase();
  h = await startDaemonHarness(db, { metricsToken: TOKEN });
});
afterAll(async () => {
  await h?.close();
  await db?.close();
});

const scrape = async () => {
  const res = await fetch(`${h.daemon.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(res.status).toBe(200);
  return res.text();
};
const value = (text: string, series: string): number => {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? Number.NaN : Number(line.slice(series.length + 1));
};

describe("GET /metrics on the heartbeat port", () => {
  it("is refused without the bearer token", async () => {
    expect((await fetch(`${h.daemon.url}/metrics`)).status).toBe(401);
  });

  it("counts connected routers, heartbeats received and written, flushes, token lookups and open faults", async () => {
    const owner = await makeUser(db);
    const router = await makeRouter(db, owner);
    const before = await scrape();
    const socket = await connectOk(h.daemon.wsUrl, router.heartbeatToken);
    socket.send({ type: "heartbeat" });
    expect(await socket.next()).toMatchObject({ type: "ack" });
    expect((await postHeartbeat(h.daemon.url, router.heartbeatToken, { type: "heartbeat" })).status).toBe(200);
    await h.daemon.flush();
    const after = await scrape();
    expect(value(after, "fleet_heartbeat_connected_routers")).toBe(1);
    const delta = (series: string) => value(after, series) - (value(before, series) || 0);
    expect(delta('fleet_heartbeats_received_total{transport="ws"}')).toBe(1);
    expect(delta('fleet_heartbeats_received_total{transport="http"}')).toBe(1);
    // Both heartbeats were written, by one or two flushes (a quiet daemon writes at once).
    expect(delta("fleet_heartbeats_written_total")).toBe(2);
    expect(delta("fleet_heartbeat_flush_batch_size_sum")).toBe(2);
    expect(delta("fleet_heartbeat_flush_duration_seconds_count")).toBe(delta("fleet_heartbeat_flush_batch_size_count"));
    expect(delta("fleet_heartbeat_flush_duration_seconds_count")).toBeGreaterThanOrEqual(1);
    // The upgrade looked the token up in the database; the HTTP heartbeat found it cached.
    expect(delta('fleet_heartbeat_token_cache_total{result="miss"}')).toBe(1);
    expect(delta('fleet_heartbeat_token_cache_total{result="hit"}')).toBe(1);
    expect(value(after, "fleet_open_faults")).toBe(0);
    // No router id anywhere in the labels.
    expect(after).not.toContain(router.id);
    await socket.close();
  });
});
