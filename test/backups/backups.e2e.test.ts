import { startTestSystem, type TestSystem } from "@fleet/all-in-one/testing";
import { createHash } from "node:crypto";
import { loadAllInOneConfig } from "@fleet/all-in-one";
import { createClient } from "@fleet/api/client";
import { countOpenRouterJobs, ROUTER_JOBS_DEAD_LETTER } from "@fleet/db";
import { createTestDatabase, databaseFingerprint, makeRouter, type TestDatabase } from "@fleet/db/testing";
import { type SimulatedRouterOs, startSimulatedRouterOs } from "@fleet/router-simulator/routeros/simulated-routeros";
import { eventually } from "@fleet/shared/testing";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePortOn } from "../forwards/forward-fixtures.ts";
import { testSystemEnv } from "../support/system-env.ts";

/**
 * Configuration backups end to end (docs/api.md "Configuration backups"): the all-in-one system
 * over a private database, a simulated router whose `/export terse` shows its NAT table, and a
 * router address where nothing answers.
 */
const TUNNEL = "127.0.0.41";
const OTHER_TUNNEL = "127.0.0.42";
const DEAD_TUNNEL = "127.0.0.43";
const HUGE_TUNNEL = "127.0.0.45";
const NUL_TUNNEL = "127.0.0.46";
/** BACKUP_MAX_BYTES of this system: far above the simulated exports, far below the hostile one. */
const MAX_BYTES = 64 * 1024;

let db: TestDatabase;
let system: TestSystem;
let router: SimulatedRouterOs;
let other: SimulatedRouterOs;
let huge: SimulatedRouterOs;
let nul: SimulatedRouterOs;

beforeAll(async () => {
  db = await createTestDatabase();
  const sshPort = await freePortOn([TUNNEL, OTHER_TUNNEL, DEAD_TUNNEL, HUGE_TUNNEL, NUL_TUNNEL]);
  const config = loadAllInOneConfig({
    ...testSystemEnv(),
    ENTRY_POINT_PORTS: "63200-63299",
    ENTRY_POINT_PROXY_PROTOCOL: "true",
    TUNNEL_SSH_PORT: String(sshPort),
    TUNNEL_SSH_USER: "fleet",
    TUNNEL_RECONCILE_INTERVAL_MS: "86400000",
    // The schedule is called directly below; its cron slot must not race the tests.
    BACKUP_INTERVAL_HOURS: "0",
    BACKUP_MAX_BYTES: String(MAX_BYTES),
    TUNNEL_NETWORK: "127.0.0.0/8",
    ENTRY_POINT_TUNNEL_SOURCE: "127.0.0.1",
  });
  system = await startTestSystem({ config, logger: pino({ level: "silent" }), db });
  const authorizedKeys = [system.tunnelAgent.publicKey];
  router = await startSimulatedRouterOs({ tunnelIp: TUNNEL, sshPort, sshUser: "fleet", authorizedKeys });
  other = await startSimulatedRouterOs({ tunnelIp: OTHER_TUNNEL, sshPort, sshUser: "fleet", authorizedKeys });
  // Hostile routers: an export of 16 MiB, and one holding NUL.
  huge = await startSimulatedRouterOs({
    tunnelIp: HUGE_TUNNEL,
    sshPort,
    sshUser: "fleet",
    authorizedKeys,
    exportText: (standard) => `${standard}\r\n${"/system note set note=x\r\n".repeat(700_000)}`,
  });
  nul = await startSimulatedRouterOs({
    tunnelIp: NUL_TUNNEL,
    sshPort,
    sshUser: "fleet",
    authorizedKeys,
    exportText: (standard) => `${standard}\r\n/system note set note=a\u0000b`,
  });
});

afterAll(async () => {
  await system?.close();
  await router?.close();
  await other?.close();
  await huge?.close();
  await nul?.close();
  await db?.close();
});

const api = async (method: string, path: string, token?: string, body?: unknown) => {
  const res = await fetch(`${system.api.url}${path}`, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body ? { "content-type": "application/json" } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: any = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    // text/plain answers stay text
  }
  return { status: res.status, body: parsed, type: res.headers.get("content-type") };
};

const login = async () => {
  const res = await api("POST", "/v1/auth/dev-login", undefined, { email: `bak-${crypto.randomUUID()}@example.com` });
  return {
    organizationId: res.body.organization_id as string,
    teamId: res.body.team_id as string,
    token: res.body.access_token as string,
  };
};

const settled = () => eventually(async () => (await countOpenRouterJobs(db)) === 0, "the job queue to settle");

const versions = async (token: string, routerId: string, query = "") => {
  const res = await api("GET", `/api/routers/${routerId}/backups${query}`, token);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as {
    data: Array<{ id: string; created_at: string; checked_at: string; sha256: string; bytes: number; lines: number }>;
    next_cursor: string | null;
    last_failure: { failed_at: string; reason: string } | null;
  };
};

describe("configuration backups of a simulated router", () => {
  it("stores a version on demand, dedups an unchanged read, and diffs a forward's rule in and out", async () => {
    const user = await login();
    const { id: routerId } = await makeRouter(db, user, { tunnelIp: TUNNEL });
    const base = `/api/routers/${routerId}/backups`;

    const taken = await api("POST", base, user.token);
    expect(taken.status).toBe(202);
    expect(taken.body).toEqual({ status: "success", data: { job_id: expect.any(String) } });
    const [first] = (await eventually(async () => {
      const page = await versions(user.token, routerId);
      return page.data.length === 1 ? page.data : undefined;
    }, "the first version")) as Awaited<ReturnType<typeof versions>>["data"];
    expect(first).toMatchObject({ sha256: expect.stringMatching(/^[0-9a-f]{64}$/), bytes: expect.any(Number) });
    const text = await api("GET", `${base}/${first?.id}`, user.token);
    expect(text.status).toBe(200);
    expect(text.type).toBe("text/plain; charset=utf-8");
    expect(text.body).toMatch(/^# \d{4}-\d\d-\d\d \d\d:\d\d:\d\d by RouterOS/);
    expect(text.body).toContain("/system identity");

    // The same configuration again (only its dated first line differs): no new version.
    // checked_at is shown to the second: read again once the shown second has passed.
    await eventually(() => Date.now() >= Date.parse(first?.checked_at ?? "") + 1_000, "the next second");
    expect((await api("POST", base, user.token)).status).toBe(202);
    await settled();
    const again = await versions(user.token, routerId);
    expect(again.data).toHaveLength(1);
    expect(again.data[0]?.id).toBe(first?.id);
    expect(Date.parse(again.data[0]?.checked_at ?? "")).toBeGreaterThan(Date.parse(first?.checked_at ?? ""));

    // A forward: its dst-nat rule appears in the next version, which follows the apply by itself.
    const forward = await api("POST", `/api/routers/${routerId}/transient-forwarding`, user.token, {
      expire_after_minutes: 60,
      dst_port: 22,
      dst_address: "192.168.88.10",
      allow_from: "8.8.8.0/24",
    });
    expect(forward.status).toBe(201);
    const forwardId = forward.body.id as string;
    const withRule = await eventually(async () => {
      const page = await versions(user.token, routerId);
      return page.data.length === 2 ? page.data : undefined;
    }, "the version with the forward's rule");
    const diffIn = await api("GET", `${base}/${withRule[0]?.id}/diff`, user.token);
    expect(diffIn.status).toBe(200);
    expect(diffIn.type).toBe("text/plain; charset=utf-8");
    const added = (diffIn.body as string).split("\n").filter((l) => l.startsWith("+") && !l.startsWith("+++"));
    const removed = (diffIn.body as string).split("\n").filter((l) => l.startsWith("-") && !l.startsWith("---"));
    expect(added).toEqual(["+/ip firewall nat", expect.stringContaining(`comment=fleet-fwd:${forwardId}`)]);
    expect(added[1]).toContain(`dst-address=${TUNNEL}`);
    expect(removed).toEqual([]);
    expect(diffIn.body).not.toContain("by RouterOS");

    // Revoked: the rule leaves the next version.
    expect((await api("DELETE", `/api/routers/${routerId}/transient-forwarding/${forwardId}`, user.token)).status).toBe(
      204,
    );
    const withoutRule = await eventually(async () => {
      const page = await versions(user.token, routerId);
      return page.data.length === 3 ? page.data : undefined;
    }, "the version without the rule");
    const diffOut = (await api("GET", `${base}/${withoutRule[0]?.id}/diff`, user.token)).body as string;
    expect(diffOut.split("\n").filter((l) => /^-[^-]/.test(l))).toEqual([
      "-/ip firewall nat",
      expect.stringContaining(`comment=fleet-fwd:${forwardId}`),
    ]);
    // Against the first version: the same configuration, so no hunk at all.
    const same = (await api("GET", `${base}/${withoutRule[0]?.id}/diff?against=${first?.id}`, user.token))
      .body as string;
    expect(same).not.toContain("@@");
    // sha256 is the hash of the text served (its dated first line included, so it differs here).
    for (const version of [first, withoutRule[0]]) {
      const served = (await api("GET", `${base}/${version?.id}`, user.token)).body as string;
      expect(version?.sha256).toBe(createHash("sha256").update(Buffer.from(served, "utf8")).digest("hex"));
    }

    // Newest first, a page at a time.
    const page1 = await versions(user.token, routerId, "?limit=2");
    expect(page1.data.map((v) => v.id)).toEqual([withoutRule[0]?.id, withRule[0]?.id]);
    const page2 = await versions(user.token, routerId, `?limit=2&cursor=${page1.next_cursor}`);
    expect(page2.data.map((v) => v.id)).toEqual([first?.id]);
    expect(page2.next_cursor).toBeNull();

    // Each change is audited (and so can be a webhook event) with its line counts.
    const audit = await api("GET", `/api/audit-log?action=router.config.changed&router_id=${routerId}`, user.token);
    expect(audit.body.data.map((e: any) => e.details)).toEqual([
      { backup_id: withoutRule[0]?.id, previous_backup_id: withRule[0]?.id, lines_added: 0, lines_removed: 2 },
      { backup_id: withRule[0]?.id, previous_backup_id: first?.id, lines_added: 2, lines_removed: 0 },
    ]);

    // tRPC names the same operations.
    const client = createClient({ url: system.api.url, token: user.token });
    expect((await client.backups.list.query({ router_id: routerId, limit: 1 })).data[0]?.id).toBe(withoutRule[0]?.id);
    expect(await client.backups.get.query({ router_id: routerId, id: first?.id ?? "" })).toBe(text.body);
    expect(await client.backups.diff.query({ router_id: routerId, id: withRule[0]?.id ?? "" })).toBe(diffIn.body);
    expect((await client.backups.take.mutate({ router_id: routerId })).data.job_id).toEqual(expect.any(String));
    await settled();
  });

  it("an unreachable router: the job retries, then the list shows when and why it failed, and no version", async () => {
    const user = await login();
    const { id: routerId } = await makeRouter(db, user, { tunnelIp: DEAD_TUNNEL });
    expect((await api("POST", `/api/routers/${routerId}/backups`, user.token)).status).toBe(202);
    const page = await eventually(
      async () => {
        const found = await versions(user.token, routerId);
        return found.last_failure ? found : undefined;
      },
      "the failure to be recorded",
      30_000,
    );
    expect(page.data).toEqual([]);
    expect(page.last_failure?.reason).toMatch(/ECONNREFUSED|connect/i);
    expect(Date.parse(page.last_failure?.failed_at ?? "")).toBeGreaterThan(Date.now() - 60_000);
    // Failed for good after three attempts: the agent then frees the router's queue by deleting the
    // original (at any moment from here), and its dead-letter copy keeps how many attempts it made.
    const copy = await eventually(async () => {
      const [row] = await db.query<{ output: { attempts?: number } | null }>(
        "select output from pgboss.job where name = $1 and data->>'router_id' = $2 and output->>'source_id' is not null",
        [ROUTER_JOBS_DEAD_LETTER, routerId],
      );
      return row;
    }, "the dead-letter copy of the backup job");
    expect(copy.output?.attempts).toBe(3);
  });

  it("an export over BACKUP_MAX_BYTES or holding NUL is refused at once, recorded as last_failure, and stores nothing", async () => {
    const user = await login();
    const cases: Array<[string, RegExp]> = [
      [HUGE_TUNNEL, new RegExp(`larger than BACKUP_MAX_BYTES \\(${MAX_BYTES} bytes\\)`)],
      [NUL_TUNNEL, /NUL/],
    ];
    for (const [tunnelIp, reason] of cases) {
      const { id: routerId } = await makeRouter(db, user, { tunnelIp });
      expect((await api("POST", `/api/routers/${routerId}/backups`, user.token)).status).toBe(202);
      const page = await eventually(async () => {
        const found = await versions(user.token, routerId);
        return found.last_failure ? found : undefined;
      }, "the refusal to be recorded");
      expect(page.data).toEqual([]);
      expect(page.last_failure?.reason).toMatch(reason);
      const [stored] = await db.query<{ n: number }>(
        "select count(*)::int as n from router_config_backups where router_id = $1",
        [routerId],
      );
      expect(stored?.n).toBe(0);
      // Not retried: a hostile answer is the same answer again.
      const [job] = await db.query<{ retry_count: number }>(
        "select retry_count from pgboss.job where name = 'router.jobs' and data->>'router_id' = $1 order by created_on desc limit 1",
        [routerId],
      );
      expect(job?.retry_count).toBe(0);
    }
    await settled();
  });

  it("refuses another team's router, a foreign version, bad pages and routers without a tunnel address", async () => {
    const owner = await login();
    const stranger = await login();
    const mine = await makeRouter(db, owner, { tunnelIp: OTHER_TUNNEL });
    const noTunnel = await makeRouter(db, owner, { tunnelIp: null });
    const theirs = await makeRouter(db, stranger, { tunnelIp: "127.0.0.44" });
    await api("POST", `/api/routers/${mine.id}/backups`, owner.token);
    const [version] = (
      await eventually(async () => {
        const page = await versions(owner.token, mine.id);
        return page.data.length === 1 ? page.data : undefined;
      }, "a version of the owner's router")
    ).slice(0, 1);
    await db.query(
      "insert into router_config_backups (id, router_id, created_at, checked_at, sha256, bytes, lines, content) values (gen_random_uuid(), $1, now(), now(), repeat('a', 64), 1, 1, 'x')",
      [theirs.id],
    );
    const [foreign] = await db.query<{ id: string }>("select id from router_config_backups where router_id = $1", [
      theirs.id,
    ]);
    const reader = (
      await api("POST", "/v1/auth/dev-login", undefined, {
        email: `bak-reader-${crypto.randomUUID()}@example.com`,
        scope: "routers:read",
      })
    ).body.access_token as string;
    const before = await databaseFingerprint(db);
    const checks: Array<[string, string, string, number]> = [
      ["stranger lists", "GET", `/api/routers/${mine.id}/backups`, 404],
      ["stranger backs up", "POST", `/api/routers/${mine.id}/backups`, 404],
      ["stranger reads", "GET", `/api/routers/${mine.id}/backups/${version?.id}`, 404],
      ["stranger diffs", "GET", `/api/routers/${mine.id}/backups/${version?.id}/diff`, 404],
    ];
    for (const [what, method, path, status] of checks) {
      expect((await api(method, path, stranger.token)).status, what).toBe(status);
    }
    const ownerChecks: Array<[string, string, string, number]> = [
      ["a foreign version by id", "GET", `/api/routers/${mine.id}/backups/${foreign?.id}`, 404],
      [
        "a diff against a foreign version",
        "GET",
        `/api/routers/${mine.id}/backups/${version?.id}/diff?against=${foreign?.id}`,
        404,
      ],
      ["a malformed id", "GET", `/api/routers/${mine.id}/backups/not-a-uuid`, 404],
      ["against a malformed id", "GET", `/api/routers/${mine.id}/backups/${version?.id}/diff?against=nope`, 404],
      ["no tunnel address", "POST", `/api/routers/${noTunnel.id}/backups`, 409],
      ["limit 0", "GET", `/api/routers/${mine.id}/backups?limit=0`, 422],
      ["limit 201", "GET", `/api/routers/${mine.id}/backups?limit=201`, 422],
      ["a bad cursor", "GET", `/api/routers/${mine.id}/backups?cursor=nonsense`, 422],
    ];
    for (const [what, method, path, status] of ownerChecks) {
      const res = await api(method, path, owner.token);
      expect(res.status, what).toBe(status);
      expect(res.body.status, what).toBe("fail");
    }
    expect((await versions(owner.token, mine.id, "?limit=200")).data).toHaveLength(1);
    expect((await api("POST", `/api/routers/${mine.id}/backups`, reader)).status).toBe(403);
    // Without the heartbeat daemon's bookkeeping, which moves on its own schedule (each sweep tick
    // marks `heartbeat_daemons`).
    const own = (fingerprint: string) =>
      fingerprint.split(",").filter((t) => !t.startsWith("heartbeat_coverage:") && !t.startsWith("heartbeat_daemons:"));
    expect(own(await databaseFingerprint(db))).toEqual(own(before));
  });

  it("the schedule queues each router with a tunnel address once per BACKUP_INTERVAL_HOURS", async () => {
    await settled();
    const first = await system.tunnelAgent.scheduleBackups();
    expect(first).toBeGreaterThan(0);
    expect(await system.tunnelAgent.scheduleBackups()).toBe(0);
  });
});
