import {
  type AdoptionScriptInput,
  adoptionScript,
  generateEd25519KeyPair,
  HEALTH_SCRIPT_MAX_INTERFACES,
  ManualClock,
  ZHeartbeatFrame,
} from "@fleet/shared";
import { describe, expect, it } from "vitest";
import { type HealthBehaviour, healthSeed, SimulatedHealth } from "../health/simulated-health.ts";
import { RouterOsDevice } from "./routeros-device.ts";
import { parseRouterOsScript } from "./routeros-script-parser.ts";

const agentPublic = generateEd25519KeyPair().public.trim().split(" ").slice(0, 2).join(" ");
const INPUT: AdoptionScriptInput = {
  routerId: "0b6c6a8e-1111-4222-8333-944455556666",
  routerName: "Office",
  heartbeatUrl: "http://127.0.0.1:3001/v1/heartbeat",
  heartbeatToken: "hb_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG",
  intervalMs: 30_000,
  sshUser: "mgmt",
  tunnelNetwork: "100.64.0.0/10",
  agentPublicKey: agentPublic,
  pingTarget: "100.64.0.1",
};

const BOOTED = Date.UTC(2026, 10, 20, 10, 0, 0);
const START = BOOTED + 86_400_000;

interface Beat {
  resources?: Record<string, number>;
  interfaces?: Array<{ name: string; rx_bytes: number; tx_bytes: number; rx_errors: number; running: boolean }>;
  ping?: { target: string; sent: number; received: number; rtt_avg_ms?: number; rtt_max_ms?: number };
}

/** A device that adopted with INPUT; `beat()` runs its heartbeat script once and answers what it posted. */
const adopted = async (
  o: {
    routerId?: string;
    routerboard?: boolean;
    behaviour?: HealthBehaviour;
    bootedAt?: number;
    clock?: ManualClock;
    input?: Partial<AdoptionScriptInput>;
  } = {},
) => {
  const clock = o.clock ?? new ManualClock(START);
  const bodies: string[] = [];
  const routerboard = o.routerboard ?? true;
  const d = new RouterOsDevice({
    identity: "edge-1",
    version: "7.16.2 (stable)",
    boardName: routerboard ? "RB5009UG+S+" : "CHR",
    model: routerboard ? "RB5009UG+S+" : "",
    routerboard,
    serialNumber: "HE708ABCDEF",
    licenseId: "AB12-CD34",
    bootedAt: o.bootedAt ?? BOOTED,
    clock,
    health: new SimulatedHealth(healthSeed(o.routerId ?? INPUT.routerId), routerboard, o.behaviour ?? {}),
    http: async (request) => {
      bodies.push(request.body ?? "");
      return { status: 200, body: '{"type":"ack","interval_ms":30000}' };
    },
  });
  await d.run(adoptionScript({ ...INPUT, ...o.input }));
  d.stop();
  const beat = async (): Promise<Beat & { raw: string }> => {
    await d.run("/system script run fleet-heartbeat");
    const raw = bodies.at(-1) ?? "";
    return { ...(JSON.parse(raw) as Beat), raw };
  };
  return { d, clock, beat, first: JSON.parse(bodies[0] ?? "{}") as Beat };
};

describe("health in the heartbeat of a simulated RouterOS 7 device", () => {
  it("reports resources, running interfaces of the watched types and a 5-packet ping, as :serialize writes them", async () => {
    const { first, beat } = await adopted();
    const { raw } = await beat();
    expect(first.resources).toEqual({
      cpu_load: expect.any(Number),
      memory_total: 1024 * 1024 * 1024,
      memory_free: expect.any(Number),
      disk_total: 1024 * 1024 * 1024,
      disk_free: expect.any(Number),
      temperature: expect.any(Number),
      voltage: expect.any(Number),
    });
    const r = first.resources ?? {};
    expect(r.cpu_load).toBeGreaterThanOrEqual(0);
    expect(r.cpu_load).toBeLessThanOrEqual(50);
    expect(r.memory_free).toBeLessThan(r.memory_total ?? 0);
    expect(r.temperature).toBeGreaterThan(30);
    expect(r.temperature).toBeLessThan(60);
    expect(r.voltage).toBeGreaterThan(23);
    // Numbers are floats with six decimals; the interfaces are a JSON array.
    expect(raw).toMatch(/"cpu_load":\d+\.000000/);
    expect(raw).toMatch(/"interfaces":\[\{"name":"ether1","running":true,"rx_bytes":\d+\.000000/);
    const names = first.interfaces?.map((i) => i.name) ?? [];
    expect(names).toContain("ether1");
    expect(names).toContain("vlan10");
    expect(names).toContain("wlan1");
    // Not running (ether4) or not a watched type (bridge): left out.
    expect(names).not.toContain("ether4");
    expect(names).not.toContain("bridge");
    expect(first.ping).toMatchObject({ target: "100.64.0.1", sent: 5, received: 5 });
    expect(first.ping?.rtt_avg_ms).toBeGreaterThanOrEqual(0);
    expect(first.ping?.rtt_max_ms).toBeGreaterThanOrEqual(first.ping?.rtt_avg_ms ?? 0);
    // The heartbeat schema the daemon validates with takes it as it is.
    const parsed = ZHeartbeatFrame.safeParse(JSON.parse(raw));
    expect(parsed.error).toBeUndefined();
    expect(parsed.data?.resources?.cpu_load).toBe(r.cpu_load);
    expect(parsed.data?.interfaces?.length).toBe(names.length);
    expect(parsed.data?.ping?.received).toBe(5);
  });

  it("sends no ping without a target, and a CHR has no temperature or voltage", async () => {
    const { first } = await adopted({ routerboard: false, input: { pingTarget: undefined } });
    expect(first.ping).toBeUndefined();
    expect(first.resources).not.toHaveProperty("temperature");
    expect(first.resources).not.toHaveProperty("voltage");
    expect(first.resources).toHaveProperty("cpu_load");
    expect(first.interfaces?.map((i) => i.name)).toEqual(["ether1", "ether2"]);
  });

  it("is the same for the same router at the same time, different for another, and drifts slowly", async () => {
    const a = await adopted();
    const b = await adopted();
    const other = await adopted({ routerId: "9f3c1d2e-aaaa-4bbb-8ccc-dddddddddddd" });
    expect(b.first.resources).toEqual(a.first.resources);
    expect(other.first.resources).not.toEqual(a.first.resources);
    a.clock.advance(300_000);
    const later = await a.beat();
    expect(Math.abs((later.resources?.cpu_load ?? 0) - (a.first.resources?.cpu_load ?? 0))).toBeLessThanOrEqual(3);
    expect(Math.abs((later.resources?.temperature ?? 0) - (a.first.resources?.temperature ?? 0))).toBeLessThanOrEqual(
      2,
    );
  });

  it("counts interface bytes up while the router runs and from zero after a reboot", async () => {
    const { first, clock, beat } = await adopted();
    clock.advance(30_000);
    const next = await beat();
    for (const [i, before] of (first.interfaces ?? []).entries()) {
      expect(next.interfaces?.[i]?.rx_bytes).toBeGreaterThan(before.rx_bytes);
      expect(next.interfaces?.[i]?.tx_bytes).toBeGreaterThan(before.tx_bytes);
    }
    const rebooted = await adopted({ bootedAt: START - 60_000 });
    for (const [i, before] of (first.interfaces ?? []).entries()) {
      expect(rebooted.first.interfaces?.[i]?.rx_bytes).toBeLessThan(before.rx_bytes / 100);
    }
  });

  it("--overload, --overheat and --lossy push CPU above 95 %, temperature above 80 C and loss to half", async () => {
    const { first, beat, clock } = await adopted({ behaviour: { overload: true, overheat: true, lossy: true } });
    expect(first.resources?.cpu_load).toBeGreaterThan(95);
    expect(first.resources?.cpu_load).toBeLessThanOrEqual(100);
    expect(first.resources?.temperature).toBeGreaterThan(80);
    let sent = first.ping?.sent ?? 0;
    let received = first.ping?.received ?? 0;
    clock.advance(30_000);
    const second = await beat();
    sent += second.ping?.sent ?? 0;
    received += second.ping?.received ?? 0;
    expect(sent).toBe(10);
    expect(received).toBe(5);
    const calm = await adopted();
    expect(calm.first.resources?.cpu_load).toBeLessThanOrEqual(95);
    expect(calm.first.resources?.temperature).toBeLessThanOrEqual(80);
  });

  it("reports at most 64 interfaces, however many are running", async () => {
    const few = await adopted({ routerboard: false, behaviour: { vlans: HEALTH_SCRIPT_MAX_INTERFACES - 2 } });
    expect(few.first.interfaces).toHaveLength(HEALTH_SCRIPT_MAX_INTERFACES);
    const many = await adopted({ routerboard: false, behaviour: { vlans: HEALTH_SCRIPT_MAX_INTERFACES - 1 } });
    expect(many.first.interfaces).toHaveLength(HEALTH_SCRIPT_MAX_INTERFACES);
    expect(many.first.interfaces?.map((i) => i.name)).not.toContain(`vlan${100 + HEALTH_SCRIPT_MAX_INTERFACES - 2}`);
    expect(ZHeartbeatFrame.safeParse(many.first).success).toBe(true);
  });

  it("keeps sending a heartbeat when a reading fails: a board without /system health values", async () => {
    const { d } = await adopted();
    // A sensor that is not there is `no such item`, caught by the script's `:do ... on-error`.
    await expect(d.run('/system health get [find where name="psu1-voltage"] value')).rejects.toThrow(/no such item/);
  });
});

describe("script syntax health reading needs", () => {
  it("runs :foreach, :toarray, :typeof, :tonum and integer and time arithmetic", async () => {
    const { d } = await adopted();
    await d.run(
      [
        ":local n 0",
        ':foreach k in=[:toarray "a,b,c"] do={ :set n ($n + 1) }',
        ":put $n",
        ':put ([:len [:toarray "a,b"]] < 3)',
        ":put (7 / 2)",
        ":local r [/ping address=192.0.2.1 count=1 as-value]",
        ':foreach p in=$r do={ :put [:typeof ($p->"time")]; :put [:tonum (($p->"time") * 1000)] }',
      ].join("\n"),
    );
    const put = d.log.filter((l) => l.topic === "put").map((l) => l.message);
    expect(put.slice(0, 4)).toEqual(["3", "true", "3", "time"]);
    expect(Number(put[4])).toBeGreaterThanOrEqual(0);
  });

  it("refuses what it does not simulate, loudly", async () => {
    const { d } = await adopted();
    await expect(d.run("/ping address=192.0.2.1 count=5")).rejects.toThrow(/as-value/);
    await expect(d.run("/ping address=192.0.2.1 count=5 as-value bogus=1")).rejects.toThrow(/expected end of command/);
    await expect(d.run("/interface get ether1 bogus-counter")).rejects.toThrow(/value-name/);
    expect(() => parseRouterOsScript(":put (1 - 2)")).toThrow(/operator/);
  });
});
