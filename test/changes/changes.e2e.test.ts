import { loadAllInOneConfig } from "@fleet/all-in-one";
import { startTestSystem, type TestSystem } from "@fleet/all-in-one/testing";
import { createTestDatabase, type TestDatabase } from "@fleet/db/testing";
import { AdoptedRouter } from "@fleet/router-simulator/adoption/adopted-router";
import { FleetApi } from "@fleet/router-simulator/fleet-api";
import { type SimulatedRouterOs, startSimulatedRouterOs } from "@fleet/router-simulator/routeros/simulated-routeros";
import { eventually } from "@fleet/shared/testing";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePortOn } from "../forwards/forward-fixtures.ts";
import { testSystemEnv } from "../support/system-env.ts";

/**
 * Fleet changes end to end (docs/api.md "Changes", docs/routeros.md "The guard"): the whole system
 * in process, and simulated routers adopted with their enroll answer's command, whose RouterOS side
 * runs the agent's backups, guard and script. One router loses its tunnel after the change
 * (`--break-tunnel-on-change`) and reverts itself; one is upgraded from the stable channel.
 */
const NETWORK = "127.39.0.0/24";
const HOSTS = Array.from({ length: 12 }, (_, i) => `127.39.0.${i + 1}`);
const INTERVAL_MS = 1_000;
const GUARD_SECONDS = 60;

let db: TestDatabase;
let system: TestSystem;
let token: string;
const routers: AdoptedRouter[] = [];
const routerOs: SimulatedRouterOs[] = [];

const api = async (method: string, path: string, body?: unknown) => {
  const res = await fetch(`${system.api.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: any = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    // text stays text
  }
  return { status: res.status, body: parsed };
};

interface StepResult {
  router_id: string;
  state: string;
  output: string | null;
}

const results = async (changeId: string): Promise<StepResult[]> => {
  const res = await api("GET", `/api/changes/${changeId}/routers`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data as StepResult[];
};

const FINAL = new Set(["succeeded", "failed", "reverted", "skipped_offline", "cancelled"]);

/** Waits until every router of the change has its result; answers them by router id. */
const finished = async (changeId: string, timeoutMs: number): Promise<Map<string, StepResult>> => {
  // Watched in the database (cheap at the poll rate), then read as the API answers it.
  await eventually(
    async () => {
      const states = await db.query<{ state: string }>("select state from change_routers where change_id = $1", [
        changeId,
      ]);
      return states.length > 0 && states.every((r) => FINAL.has(r.state));
    },
    `change ${changeId} to finish`,
    timeoutMs,
  );
  const rows = await results(changeId);
  return new Map(rows.map((r) => [r.router_id, r]));
};

const createChange = async (body: Record<string, unknown>): Promise<string> => {
  const res = await api("POST", "/api/changes", body);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return (res.body.data ?? res.body).id as string;
};

const guards = (router: AdoptedRouter) =>
  router.device.tables["system scheduler"].map((s) => s.props.name ?? "").filter((n) => n.startsWith("fleet-change-"));

const online = (router: AdoptedRouter) =>
  eventually(async () => {
    const [row] = await db.query<{ has_pulse: boolean }>("select has_pulse from router_liveness where router_id = $1", [
      router.routerId,
    ]);
    return row?.has_pulse === true && router.device.system.reachable;
  }, `${router.device.identity} online`);

beforeAll(async () => {
  db = await createTestDatabase();
  const sshPort = await freePortOn(HOSTS);
  const config = loadAllInOneConfig(
    testSystemEnv({
      HEARTBEAT_INTERVAL_MS: String(INTERVAL_MS),
      MISSED_HEARTBEATS: "10",
      ENTRY_POINT_PORTS: "63860-63869",
      TUNNEL_SSH_PORT: String(sshPort),
      TUNNEL_NETWORK: NETWORK,
      TUNNEL_RECONCILE_INTERVAL_MS: "86400000",
      BACKUP_INTERVAL_HOURS: "0",
      RATE_LIMIT_PER_MINUTE: "1000000",
    }),
  );
  system = await startTestSystem({ config, logger: pino({ level: "silent" }), db });
  const email = `changes-${crypto.randomUUID()}@example.com`;
  const login = await fetch(`${system.api.url}/v1/auth/dev-login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email }),
  });
  token = ((await login.json()) as { access_token: string }).access_token;
  const fleet = new FleetApi(system.api.url);
  fleet.useToken(token);
  await fleet.ensureAccount(email);
  for (const [index, identity] of ["edge-ok", "edge-cut", "edge-fw"].entries()) {
    const enrolled = await fleet.enroll(identity);
    const router = new AdoptedRouter({
      index,
      routerId: enrolled.router_id,
      adoptionCommand: enrolled.adoption_command ?? "",
      tunnelIp: enrolled.tunnel_ip ?? "",
      bindTunnelIp: false,
      identity,
      system: { rebootSeconds: 2, breakTunnelOnChange: identity === "edge-cut" },
    });
    routers.push(router);
    routerOs.push(
      await startSimulatedRouterOs({
        tunnelIp: router.tunnelIp,
        sshPort,
        authorize: router.authorize,
        configuration: router.configuration,
        script: router.script,
        reachable: router.reachable,
      }),
    );
    await router.adopt();
  }
  for (const router of routers) await online(router);
}, 120_000);

afterAll(async () => {
  for (const router of routers) router.stop();
  for (const ros of routerOs) await ros.close();
  await system?.close();
  await db?.close();
});

const ok = () => routers[0] as AdoptedRouter;
const cut = () => routers[1] as AdoptedRouter;
const fw = () => routers[2] as AdoptedRouter;

describe("fleet changes on simulated routers", () => {
  it(
    "a script succeeds on one router and reverts through the guard on the one it cuts off",
    async () => {
      const changeId = await createChange({
        name: "DNS and note",
        kind: "script",
        script: '/ip dns set servers=9.9.9.9\n/system note set note="changed on {{identity}}"\n:put "applied"',
        routers: { router_ids: [ok().routerId, cut().routerId] },
        strategy: { canary: 1, wave_size: 10, wave_interval_seconds: 0, max_failures: 1 },
        guard_seconds: GUARD_SECONDS,
      });
      const byRouter = await finished(changeId, (GUARD_SECONDS + 60) * 1000);
      expect(byRouter.get(ok().routerId)?.state).toBe("succeeded");
      expect(byRouter.get(ok().routerId)?.output).toContain("applied");
      expect(ok().device.system.settings().dns.servers).toBe("9.9.9.9");
      expect(ok().device.system.settings().note.note).toBe("changed on edge-ok");
      // Confirmed: neither the guard nor its binary backup is left behind.
      expect(guards(ok())).toEqual([]);
      expect(ok().device.system.backups()).toEqual([]);

      expect(byRouter.get(cut().routerId)?.state).toBe("reverted");
      // The router loaded its backup by itself: the change is gone and the tunnel is back.
      await eventually(() => cut().device.system.reachable, "the cut-off router back", 30_000);
      expect(cut().device.system.settings().dns.servers).toBe("");
      expect(guards(cut())).toEqual([]);

      // The script was sent once to each router.
      for (const ros of routerOs.slice(0, 2)) {
        expect(ros.ssh.commands().filter((c) => c.includes("/ip dns set servers=9.9.9.9"))).toHaveLength(1);
      }
      const change = await api("GET", `/api/changes/${changeId}`);
      expect(change.body.data.state).toBe("completed");
    },
    (GUARD_SECONDS + 120) * 1000,
  );

  it("a script error fails the router with RouterOS's output, runs nothing and leaves no guard", async () => {
    await online(ok());
    const changeId = await createChange({
      name: "typo",
      kind: "script",
      script: "/ip dns set servers=1.0.0.1\n/interface bridge add name=br-typo",
      routers: { router_ids: [ok().routerId] },
      guard_seconds: GUARD_SECONDS,
    });
    const byRouter = await finished(changeId, 60_000);
    const step = byRouter.get(ok().routerId);
    expect(step?.state).toBe("failed");
    expect(step?.output).toMatch(/bad command name bridge/);
    expect(ok().device.system.settings().dns.servers).toBe("9.9.9.9");
    expect(guards(ok())).toEqual([]);
  }, 90_000);

  it("a firmware change installs what the stable channel offers and ends with 7.16.2 reported", async () => {
    expect(fw().device.version).toBe("7.15.1 (stable)");
    const changeId = await createChange({
      name: "upgrade",
      kind: "firmware",
      firmware: { channel: "stable" },
      routers: { router_ids: [fw().routerId] },
      guard_seconds: GUARD_SECONDS,
    });
    const byRouter = await finished(changeId, 90_000);
    expect(byRouter.get(fw().routerId)?.state, byRouter.get(fw().routerId)?.output ?? "").toBe("succeeded");
    expect(fw().device.version).toBe("7.16.2 (stable)");
    const router = await api("GET", `/api/routers/${fw().routerId}`);
    expect(router.body.data.software_version).toMatch(/^7\.16\.2/);
    expect(guards(fw())).toEqual([]);
  }, 120_000);
});
