import { loadAllInOneConfig } from "@fleet/all-in-one";
import { apiClient, type Json } from "../support/api-client.ts";
import { startTestSystem, type TestSystem } from "@fleet/all-in-one/testing";
import { createTestDatabase, databaseFingerprint, type TestDatabase } from "@fleet/db/testing";
import { ManualClock } from "@fleet/shared";
import { eventually } from "@fleet/shared/testing";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testSystemEnv } from "../support/system-env.ts";

/**
 * Health beyond up and down, from outside (docs/api.md "Health", "Health thresholds"): routers beat
 * over HTTP to the daemon with `resources`, `interfaces` and `ping`; everything is read back over
 * the API. Domain time is a ManualClock, so a sample period, an hour or a `for_seconds` passes by
 * moving it; the threshold evaluator runs on its own 5 s timer, and the test waits for the state it
 * leaves (`router_health_states`) before moving time on. Each scenario has an organization of its own.
 */
let db: TestDatabase;
let system: TestSystem;
const HOUR = 3_600_000;
const SAMPLE = 60_000;
/** How long a wait may take on a loaded machine (the evaluator ticks every 5 s). */
const WAIT = 60_000;
/**
 * A scenario that waits for six evaluator ticks in a row: about 26-28 s on the CI machine, past the
 * default 30 s once the suite's busiest files ran beside it.
 */
const SIX_TICKS_MS = 120_000;
const clock = new ManualClock(new Date(Math.ceil(Date.now() / HOUR) * HOUR + HOUR));

beforeAll(async () => {
  db = await createTestDatabase();
  const config = loadAllInOneConfig(
    testSystemEnv({
      HEARTBEAT_INTERVAL_MS: "30000",
      MISSED_HEARTBEATS: "2",
      RESOURCE_SAMPLE_SECONDS: String(SAMPLE / 1000),
      ENTRY_POINT_PORTS: "63880-63889",
      TRIAL_ROUTERS: "100",
      // The clock is manual and the rate limit counts per its minute: polling waits would reach 600.
      RATE_LIMIT_PER_MINUTE: "1000000",
    }),
  );
  system = await startTestSystem({ config, logger: pino({ level: "silent" }), db, clock });
}, 120_000);

afterAll(async () => {
  await system?.close();
  await db?.close();
});

const { call, ok } = apiClient(() => system.api.url);

interface Router {
  id: string;
  name: string;
  heartbeatToken: string;
}

interface Tenant {
  token: string;
  routers: Router[];
}

/** An organization with a billing account and `routers` enrolled. */
const tenant = async (routers: number): Promise<Tenant> => {
  const tag = crypto.randomUUID().slice(0, 8);
  const login = await fetch(`${system.api.url}/v1/auth/dev-login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email: `health-${tag}@example.com` }),
  }).then((r) => r.json() as Promise<{ access_token: string }>);
  const token = login.access_token;
  await ok("POST", "/v1/account", token, {
    name: `Org ${tag}`,
    email: `billing-${tag}@example.com`,
    address: { country: "DE" },
  });
  const enrolled: Router[] = [];
  for (let i = 0; i < routers; i++) {
    const name = `gw-${tag}-${i}`;
    const made = await ok("POST", "/api/routers", token, { name });
    enrolled.push({ id: made.data.router.id, name, heartbeatToken: made.data.heartbeat_token });
  }
  return { token, routers: enrolled };
};

/** One heartbeat as raw text (RouterOS's own spelling), its status. */
const post = async (router: Router, text: string): Promise<{ status: number; body: Json }> => {
  const res = await fetch(`${system.heartbeat.url}/v1/heartbeat`, {
    method: "POST",
    headers: { authorization: `Bearer ${router.heartbeatToken}`, "content-type": "application/json" },
    body: text,
  });
  const body = await res.text();
  return { status: res.status, body: body ? JSON.parse(body) : undefined };
};

/** A heartbeat with health at the clock's time, written. */
const beat = async (router: Router, health: Record<string, unknown>) => {
  const answer = await post(
    router,
    JSON.stringify({ type: "heartbeat", identity: router.name, uptime: 100_000, ...health }),
  );
  expect(answer.status).toBe(200);
  await system.heartbeat.flush();
};

const at = (ms: number) => new Date(ms);
const advanceTo = (ms: number) => clock.set(at(ms));
const iso = (ms: number) => at(ms).toISOString();

/** The evaluator's state of a router's measure once `ready` holds of it. */
const evaluated = (router: Router, measure: string, ready: (s: Json) => boolean, what: string) =>
  eventually(
    async () => {
      const [state] = await db.query<Json>(
        "select above_since, below_since, fault_id from router_health_states where router_id = $1 and measure = $2",
        [router.id, measure],
      );
      return state && ready(state) ? state : null;
    },
    what,
    WAIT,
  );

const resources = (cpu: number, extra: Record<string, unknown> = {}) => ({
  resources: {
    cpu_load: cpu,
    memory_total: "1048576.000000",
    memory_free: 262144,
    disk_total: 1000,
    disk_free: "500",
    temperature: 45,
    voltage: "24.250000",
    ...extra,
  },
  ping: { target: "10.0.0.1", sent: 5, received: 4, rtt_avg_ms: 12.5, rtt_max_ms: "20" },
});

describe("health from outside", () => {
  it("samples land at 5 minutes (the last values of each period) and in hourly min/avg/max", async () => {
    const t = await tenant(1);
    const router = t.routers[0] as Router;
    const start = clock.nowMs() + HOUR - (clock.nowMs() % HOUR);
    advanceTo(start);
    await beat(router, resources(10));
    advanceTo(start + 30_000);
    await beat(router, resources(20));
    advanceTo(start + SAMPLE);
    await beat(router, resources(30));
    advanceTo(start + 2 * SAMPLE);
    await beat(router, resources(60, { temperature: "47.000000" }));
    // The next hour: the first hour closes.
    advanceTo(start + HOUR + 10_000);
    await beat(router, resources(5));
    advanceTo(start + HOUR + 2 * SAMPLE);
    await beat(router, resources(6));

    const path = (step: string) =>
      `/api/routers/${router.id}/resources?step=${step}&from=${iso(start)}&to=${iso(start + 2 * HOUR)}`;
    const samples = await eventually(
      async () => {
        const data = (await ok("GET", path("5m"), t.token)).data;
        return data.length >= 4 ? data : null;
      },
      "four closed samples",
      WAIT,
    );
    expect(samples.slice(0, 4).map((s: Json) => [new Date(s.at).getTime(), s.cpu_load])).toEqual([
      [start, 20],
      [start + SAMPLE, 30],
      [start + 2 * SAMPLE, 60],
      [start + HOUR, 5],
    ]);
    expect(samples[0]).toMatchObject({
      memory_used_percent: 75,
      disk_used_percent: 50,
      temperature: 45,
      ping_loss_percent: 20,
      ping_rtt_ms: 12.5,
    });
    // Quantized as docs/scale.md "Health samples" says: voltage to 0.25 V.
    expect(samples[0].voltage).toBe(24.25);
    expect(samples[2].temperature).toBe(47);

    const hours = (await ok("GET", path("1h"), t.token)).data;
    // Stored to 1 % (docs/scale.md "Health samples"): an average that is a whole number.
    expect(hours[0]).toMatchObject({ cpu_load: 30, min_cpu_load: 10, max_cpu_load: 60, memory_used_percent: 75 });
    expect(new Date(hours[0].at).getTime()).toBe(start);
    expect(hours[0]).toMatchObject({ min_temperature: 45, max_temperature: 47 });
  });

  it("interface counters become bits per second across a counter reset, with no spike", async () => {
    const t = await tenant(1);
    const router = t.routers[0] as Router;
    const start = clock.nowMs() + HOUR - (clock.nowMs() % HOUR);
    // 1,000 bit/s received and 2,000 bit/s sent: 7,500 and 15,000 bytes a minute.
    const counters = [
      [1_000_000, 5_000_000],
      [1_007_500, 5_015_000],
      [1_015_000, 5_030_000],
      [200, 300], // a reboot
      [7_700, 15_300],
      [15_200, 30_300],
    ];
    for (const [i, [rx, tx]] of counters.entries()) {
      advanceTo(start + i * SAMPLE);
      await beat(router, {
        interfaces: [
          { name: "ether1", rx_bytes: String(rx), tx_bytes: tx, rx_errors: i, tx_errors: "0", running: "true" },
          { name: "wg-hub", rx_bytes: 0, tx_bytes: 0, running: false },
        ],
      });
    }
    advanceTo(start + counters.length * SAMPLE);
    await beat(router, {});

    const traffic = await eventually(
      async () => {
        const data = (
          await ok(
            "GET",
            `/api/routers/${router.id}/interfaces/ether1/traffic?step=5m&from=${iso(start)}&to=${iso(start + HOUR)}`,
            t.token,
          )
        ).data;
        return data.length >= counters.length ? data : null;
      },
      "a traffic point per period",
      WAIT,
    );
    const rates = traffic.map((p: Json) => [p.rx_bps, p.tx_bps]);
    // Every rate that exists is the real one; the reset is no spike (null, or the real rate).
    for (const [rx, tx] of rates) {
      if (rx !== null) expect(rx).toBeCloseTo(1000, 3);
      if (tx !== null) expect(tx).toBeCloseTo(2000, 3);
    }
    expect(rates.filter(([rx]: number[]) => rx !== null).length).toBeGreaterThanOrEqual(4);
    expect(traffic.map((p: Json) => p.rx_errors).reduce((a: number, b: number) => a + Number(b ?? 0), 0)).toBe(
      counters.length - 1,
    );

    const interfaces = (await ok("GET", `/api/routers/${router.id}/interfaces`, t.token)).data;
    const ether1 = interfaces.find((i: Json) => i.name === "ether1");
    expect(ether1).toMatchObject({ name: "ether1", running: true, rx_bytes: 15_200, tx_bytes: 30_300 });
    expect(ether1.rx_bps).toBeCloseTo(1000, 3);
    expect(ether1.tx_bps).toBeCloseTo(2000, 3);
    expect(interfaces.find((i: Json) => i.name === "wg-hub")).toMatchObject({ running: false });

    const hourly = (
      await ok(
        "GET",
        `/api/routers/${router.id}/interfaces/ether1/traffic?step=1h&from=${iso(start - HOUR)}&to=${iso(start + HOUR)}`,
        t.token,
      )
    ).data;
    for (const p of hourly) if (p.rx_bps !== null) expect(p.rx_bps).toBeLessThanOrEqual(1000.001);
  });

  it("the list carries the latest cpu, memory and temperature and sorts worst first", async () => {
    const t = await tenant(4);
    const [cool, hot, warm, silent] = t.routers as [Router, Router, Router, Router];
    await beat(cool, resources(10, { temperature: 40 }));
    await beat(hot, resources(80, { temperature: 70 }));
    await beat(warm, resources(50, { temperature: 60, memory_free: 0 }));
    const list = (await ok("GET", "/api/routers?sort=cpu", t.token)).data;
    expect(list.map((r: Json) => r.id)).toEqual([hot.id, warm.id, cool.id, silent.id]);
    expect(list[0]).toMatchObject({ cpu_load: 80, memory_used_percent: 75, temperature: 70 });
    expect(list[3]).toMatchObject({ cpu_load: null, memory_used_percent: null, temperature: null });
    const byMemory = (await ok("GET", "/api/routers?sort=memory", t.token)).data;
    expect(byMemory[0].id).toBe(warm.id);
    expect(byMemory[0].memory_used_percent).toBe(100);
    const byTemperature = (await ok("GET", "/api/routers?sort=temperature", t.token)).data;
    expect(byTemperature.map((r: Json) => r.id)).toEqual([hot.id, warm.id, cool.id, silent.id]);
  });

  it(
    "a threshold opens a resource fault after for_seconds and completes it with hysteresis",
    async () => {
      const t = await tenant(1);
      const router = t.routers[0] as Router;
      await ok("PUT", "/api/health-thresholds", t.token, { cpu: { above: 80, for_seconds: 60 } });
      const t0 = clock.nowMs();
      await beat(router, resources(95));
      await evaluated(router, "cpu", (s) => s.above_since !== null, "cpu seen above");
      advanceTo(t0 + 30_000);
      await beat(router, resources(96));
      advanceTo(t0 + 60_000);
      await beat(router, resources(97));
      const faults = () => ok("GET", `/api/routers/${router.id}/faults`, t.token).then((b) => b.data as Json[]);
      const resourceFaults = async () => (await faults()).filter((f) => f.type === "resource");
      const [open] = await eventually(
        async () => {
          const list = await resourceFaults();
          return list.length > 0 ? list : null;
        },
        "the cpu fault open",
        WAIT,
      );
      expect(open).toMatchObject({ type: "resource", cause: "cpu", severity: "warning", status: "ongoing" });
      expect(new Date(open.created_at).getTime()).toBe(t0);

      // A dip shorter than for_seconds keeps it open.
      advanceTo(t0 + 90_000);
      await beat(router, resources(50));
      await evaluated(router, "cpu", (s) => s.below_since !== null, "cpu seen below");
      advanceTo(t0 + 120_000);
      await beat(router, resources(95));
      await evaluated(router, "cpu", (s) => s.below_since === null && s.above_since !== null, "cpu above again");
      expect((await resourceFaults()).map((f) => f.status)).toEqual(["ongoing"]);

      // Under it (at the threshold counts) for the whole for_seconds completes it.
      advanceTo(t0 + 150_000);
      await beat(router, resources(80));
      await evaluated(router, "cpu", (s) => s.below_since !== null, "cpu below for good");
      advanceTo(t0 + 210_000);
      await beat(router, resources(40));
      const [done] = await eventually(
        async () => {
          const list = await resourceFaults();
          return list[0]?.status === "completed" ? list : null;
        },
        "the cpu fault completed",
        WAIT,
      );
      expect(done).toMatchObject({ cause: "cpu", status: "completed", duration: 210 });
      expect(new Date(done.resolved_at).getTime()).toBe(t0 + 210_000);

      const audit = (await ok("GET", `/api/audit-log?router_id=${router.id}&action=router.resource`, t.token)).data;
      // The values the evaluator saw: a tick may fall between moving the clock and the next beat.
      expect(audit.map((e: Json) => [e.details.measure, e.details.threshold, e.details.state])).toEqual([
        ["cpu", 80, "below"],
        ["cpu", 80, "above"],
      ]);
      expect([40, 80]).toContain(audit[0].details.value);
      expect([96, 97]).toContain(audit[1].details.value);
    },
    SIX_TICKS_MS,
  );

  it("bad values are refused with 422 naming the field, and change nothing", async () => {
    const t = await tenant(1);
    const router = t.routers[0] as Router;
    await beat(router, {
      ...resources(33),
      interfaces: [{ name: "ether1", rx_bytes: 1, tx_bytes: 2, running: true }],
    });
    const reads = async () =>
      Promise.all([
        // `last_seen` is relative to now: the rest of the Router is compared.
        ok("GET", `/api/routers/${router.id}`, t.token).then(({ data: { last_seen: _, ...rest } }) => rest),
        ok("GET", `/api/routers/${router.id}/interfaces`, t.token),
        ok("GET", `/api/routers/${router.id}/resources?step=5m`, t.token),
      ]);
    const own = (fingerprint: string) =>
      fingerprint.split(",").filter((x) => !x.startsWith("heartbeat_coverage:") && !x.startsWith("heartbeat_daemons:"));
    // Routers of earlier scenarios fell silent as the clock moved: their offline is written first.
    await system.heartbeat.sweep();
    const readsBefore = await reads();
    const before = own(await databaseFingerprint(db));
    const many = Array.from({ length: 65 }, (_, i) => ({ name: `ether${i}`, rx_bytes: 1, tx_bytes: 1 }));
    const heartbeat = (health: string) => `{"type":"heartbeat","identity":"${router.name}",${health}}`;
    const refused: Array<[string, string, string]> = [
      ["NaN as RouterOS writes it", "cpu_load", heartbeat('"resources":{"cpu_load":"NaN"}')],
      ["nan", "temperature", heartbeat('"resources":{"temperature":"nan"}')],
      ["inf", "voltage", heartbeat('"resources":{"voltage":"inf"}')],
      ["negative", "cpu_load", heartbeat('"resources":{"cpu_load":-1}')],
      ["cpu over 100", "cpu_load", heartbeat('"resources":{"cpu_load":100.5}')],
      ["10^30 bytes", "memory_total", heartbeat('"resources":{"memory_total":1e30}')],
      [
        "a 10^30 counter",
        "rx_bytes",
        heartbeat('"interfaces":[{"name":"ether1","rx_bytes":"1000000000000000000000000000000"}]'),
      ],
      ["65 interfaces", "interfaces", heartbeat(`"interfaces":${JSON.stringify(many)}`)],
      ["a control character", "name", heartbeat('"interfaces":[{"name":"ether\\u0001","rx_bytes":1}]')],
      ["a control character in the ping target", "target", heartbeat('"ping":{"target":"10.0.0.1\\u007f","sent":5}')],
      ["received more than sent", "received", heartbeat('"ping":{"sent":5,"received":6}')],
      ["a wrong type", "cpu_load", heartbeat('"resources":{"cpu_load":true}')],
      ["interfaces not a list", "interfaces", heartbeat('"interfaces":{"name":"ether1"}')],
    ];
    advanceTo(clock.nowMs() + 5_000);
    for (const [what, field, text] of refused) {
      const answer = await post(router, text);
      expect(answer.status, what).toBe(422);
      expect(JSON.stringify(answer.body), what).toContain(field);
    }
    await system.heartbeat.flush();
    expect(own(await databaseFingerprint(db))).toEqual(before);
    expect(await reads()).toEqual(readsBefore);
    // The limit is 64: 64 interfaces are taken (on another router, this one stays untouched).
    const stranger = await tenant(1);
    const other = stranger.routers[0] as Router;
    expect((await post(other, heartbeat(`"interfaces":${JSON.stringify(many.slice(0, 64))}`))).status).toBe(200);
    await system.heartbeat.flush();
    expect((await ok("GET", `/api/routers/${other.id}/interfaces`, stranger.token)).data).toHaveLength(64);
    // Another organization's router is not found.
    for (const path of ["resources?step=1h", "interfaces", "interfaces/ether1/traffic"]) {
      const answer = await call("GET", `/api/routers/${router.id}/${path}`, stranger.token);
      expect(answer.status, path).toBe(404);
      expect(answer.body).toMatchObject({ status: "fail", message: expect.any(String) });
    }
  });

  it("thresholds are refused at n+1 and change nothing; null stops watching a measure", async () => {
    const t = await tenant(0);
    const accepted = { cpu: { above: 100, for_seconds: 86_400 }, temperature: { above: 150, for_seconds: 0 } };
    await ok("PUT", "/api/health-thresholds", t.token, accepted);
    const before = (await ok("GET", "/api/health-thresholds", t.token)).data;
    for (const [field, body] of [
      ["cpu.above", { cpu: { above: 100.5, for_seconds: 0 } }],
      ["cpu.for_seconds", { cpu: { above: 50, for_seconds: 86_401 } }],
      ["temperature.above", { temperature: { above: 150.5, for_seconds: 0 } }],
      ["memory.above", { memory: { above: "NaN", for_seconds: 0 } }],
    ] as const) {
      const answer = await call("PUT", "/api/health-thresholds", t.token, body);
      expect(answer.status, field).toBe(422);
      expect(JSON.stringify(answer.body), field).toContain(field.split(".")[0]);
    }
    expect((await ok("GET", "/api/health-thresholds", t.token)).data).toEqual(before);
    await ok("PUT", "/api/health-thresholds", t.token, { cpu: null });
    const after = (await ok("GET", "/api/health-thresholds", t.token)).data;
    expect(after.cpu).toBeNull();
    expect(after.temperature).toEqual(before.temperature);
  });
});
