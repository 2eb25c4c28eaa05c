import { startTestSystem, type TestSystem } from "@fleet/all-in-one/testing";
import { eventually } from "@fleet/shared/testing";

import { createTestDatabase, type TestDatabase } from "@fleet/db/testing";
import { type RunningSimulator, startSimulator } from "@fleet/router-simulator";
import { formatDateTime, ManualClock } from "@fleet/shared";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadAllInOneConfig } from "@fleet/all-in-one";
import { FleetApi } from "@fleet/router-simulator/fleet-api";
import { testSystemEnv } from "../support/system-env.ts";

/**
 * The demo of docs/routeros.md "Simulator" in miniature: `npm start` plus the simulator. Routers enroll
 * through the API, beat over WebSocket from their own loopback tunnel address and show up online;
 * the silent one gets a fault, the others do not. Heartbeats flow in real time at a short interval;
 * the fault threshold is crossed on a ManualClock and swept by hand.
 */
const INTERVAL = 200;
const MISSED = 3;
let db: TestDatabase;
let system: TestSystem;
let sim: RunningSimulator | undefined;
const clock = new ManualClock(new Date());

beforeAll(async () => {
  db = await createTestDatabase();
  const config = loadAllInOneConfig({
    ...testSystemEnv(),
    HEARTBEAT_INTERVAL_MS: String(INTERVAL),
    MISSED_HEARTBEATS: String(MISSED),
    ENTRY_POINT_PORTS: "63310-63319",
  });
  // Sweeps happen when the test says so.
  config.heartbeat.tuning.sweepIntervalMs = 86_400_000;
  system = await startTestSystem({ config, logger: pino({ level: "silent" }), db, clock });
});

afterAll(async () => {
  await sim?.close();
  await system?.close();
  await db?.close();
});

describe("simulator against the whole system", () => {
  it("enrolls routers that appear online; the silent one faults, the steady ones do not", async () => {
    const email = `sim-${crypto.randomUUID()}@example.com`;
    const api = new FleetApi(system.api.url);
    await api.login(email);
    await api.ensureAccount(email);
    const enrolled = [];
    for (let i = 0; i < 4; i++) enrolled.push(await api.enroll(`Sim ${i}`));
    sim = await startSimulator({ routers: enrolled, heartbeatUrl: system.heartbeat.wsUrl, silent: 1 });

    const login = await fetch(`${system.api.url}/v1/auth/dev-login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email }),
    }).then((r) => r.json() as Promise<any>);
    const list = async () =>
      (
        await fetch(`${system.api.url}/api/routers`, {
          headers: { authorization: `Bearer ${login.access_token}` },
        }).then((r) => r.json() as Promise<any>)
      ).data as Array<Record<string, unknown>>;

    await eventually(async () => (await list()).filter((r) => r.has_pulse).length === 4, "four routers with a pulse");
    const routers = await list();
    const silentId = enrolled[0]?.router_id;
    // Each router answers at, and beats from, the tunnel address the system assigned (development:
    // inside the loopback 127.64.0.0/10), so its reports match its row.
    expect(enrolled.every((r) => /^127\.(6[4-9]|[7-9]\d|1[01]\d|12[0-7])\.\d+\.\d+$/.test(r.tunnel_ip ?? ""))).toBe(
      true,
    );
    expect(routers.find((r) => r.id === silentId)).toMatchObject({
      identity: "sim-0001",
      last_seen_from: enrolled[0]?.tunnel_ip,
    });
    expect(routers.map((r) => r.last_seen_from).sort()).toEqual(enrolled.map((r) => r.tunnel_ip).sort());

    // Ten minutes later on the domain clock; the steady routers keep beating at that time.
    clock.advance(10 * 60_000);
    const now = formatDateTime(clock.now());
    await expect
      .poll(async () => (await list()).filter((r) => r.last_seen_at === now).length, { timeout: 15_000 })
      .toBe(3);
    await system.heartbeat.sweep();

    const after = await list();
    expect(after.filter((r) => !r.has_pulse).map((r) => r.id)).toEqual([silentId]);
    const faults = await fetch(`${system.api.url}/api/routers/${silentId}/faults`, {
      headers: { authorization: `Bearer ${login.access_token}` },
    }).then((r) => r.json() as Promise<any>);
    expect(faults.data).toEqual([expect.objectContaining({ message: "Site Offline: sim-0001", status: "ongoing" })]);
    for (const other of enrolled.slice(1)) {
      const none = await fetch(`${system.api.url}/api/routers/${other.router_id}/faults`, {
        headers: { authorization: `Bearer ${login.access_token}` },
      }).then((r) => r.json() as Promise<any>);
      expect(none.data).toEqual([]);
    }
  });
});
