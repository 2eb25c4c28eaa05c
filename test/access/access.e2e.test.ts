import { startTestSystem, type TestSystem } from "@fleet/all-in-one/testing";
import { once } from "node:events";
import net from "node:net";
import { loadAllInOneConfig } from "@fleet/all-in-one";
import { createClient } from "@fleet/api/client";
import { countOpenRouterJobs } from "@fleet/db";
import { createTestDatabase, databaseFingerprint, makeAccount, makeRouter, type TestDatabase } from "@fleet/db/testing";
import { type SimulatedRouterOs, startSimulatedRouterOs } from "@fleet/router-simulator/routeros/simulated-routeros";
import { generateEd25519KeyPair, ManualClock } from "@fleet/shared";
import { eventually } from "@fleet/shared/testing";
import { proxyV1Header } from "@fleet/tunnel-agent";
import { InMemoryHostKeyStore } from "@fleet/tunnel-agent/routeros/host-key-store";
import { SshRouterOsConnector } from "@fleet/tunnel-agent/routeros/ssh-routeros-client";
import pino from "pino";
import ssh2 from "ssh2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePortOn } from "../forwards/forward-fixtures.ts";
import { testSystemEnv } from "../support/system-env.ts";

/**
 * Temporary access to a router itself, end to end (docs/api.md "Temporary router access"): the
 * all-in-one system, a simulated router, and an engineer's SSH client logging in through the entry
 * point with the password the API showed once. Sources are presented with PROXY headers.
 */
const TUNNEL = "127.0.0.61";
/** A router whose `fleet-full` group someone widened before the agent came (CONTRACT 14). */
const TUNNEL_WIDENED = "127.0.0.64";
const ENGINEER = "8.8.8.8";
/** Someone else with a key on the widened router: the router's own administrator. */
const adminKey = generateEd25519KeyPair();

let db: TestDatabase;
let system: TestSystem;
let router: SimulatedRouterOs;
let widened: SimulatedRouterOs;
let sshPort: number;
const clock = new ManualClock(new Date());

beforeAll(async () => {
  db = await createTestDatabase();
  sshPort = await freePortOn([TUNNEL, TUNNEL_WIDENED]);
  const config = loadAllInOneConfig({
    ...testSystemEnv(),
    ENTRY_POINT_PORTS: "63400-63499",
    ENTRY_POINT_PROXY_PROTOCOL: "true",
    TUNNEL_SSH_PORT: String(sshPort),
    TUNNEL_SSH_USER: "fleet",
    TUNNEL_RECONCILE_INTERVAL_MS: "86400000",
    TUNNEL_NETWORK: "127.0.0.0/8",
    ENTRY_POINT_TUNNEL_SOURCE: "127.0.0.1",
    BACKUP_INTERVAL_HOURS: "0",
    // The per-router cap of 20 is under test here; the billing root's trial quota has its own tests.
    TRIAL_FORWARDS: "50",
  });
  system = await startTestSystem({ config, logger: pino({ level: "silent" }), db, clock });
  router = await startSimulatedRouterOs({
    tunnelIp: TUNNEL,
    sshPort,
    sshUser: "fleet",
    authorizedKeys: [system.tunnelAgent.publicKey],
  });
  widened = await startSimulatedRouterOs({
    tunnelIp: TUNNEL_WIDENED,
    sshPort,
    sshUser: "fleet",
    authorizedKeys: [system.tunnelAgent.publicKey, adminKey.public],
  });
});

afterAll(async () => {
  await system?.close();
  await router?.close();
  await widened?.close();
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
  return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
};

const login = async () => {
  const res = await api("POST", "/v1/auth/dev-login", undefined, { email: `acc-${crypto.randomUUID()}@example.com` });
  return {
    organizationId: res.body.organization_id as string,
    teamId: res.body.team_id as string,
    token: res.body.access_token as string,
  };
};

const settled = () => eventually(async () => (await countOpenRouterJobs(db)) === 0, "the job queue to settle");

interface Session {
  run(command: string): Promise<string>;
  end(): void;
  closed: Promise<void>;
}

/** An engineer's SSH login through the entry point, presented as coming from `source`. */
const sshThroughEntryPoint = async (port: number, username: string, password: string, source = ENGINEER) => {
  const sock = net.connect({ host: "127.0.0.1", port });
  await once(sock, "connect");
  sock.write(proxyV1Header({ address: source, port: 40_000 }, { address: "127.0.0.1", port }));
  const client = new ssh2.Client();
  const closed = new Promise<void>((resolve) => client.on("close", () => resolve()));
  await new Promise<void>((resolve, reject) => {
    client.once("ready", () => resolve());
    client.once("error", reject);
    client.connect({ sock, username, password, readyTimeout: 5000 });
  });
  const session: Session = {
    run: (command) =>
      new Promise<string>((resolve, reject) => {
        client.exec(command, (error, stream) => {
          if (error) return reject(error);
          let out = "";
          stream.on("data", (d: Buffer) => {
            out += d.toString();
          });
          stream.on("close", () => resolve(out.trim()));
        });
      }),
    end: () => client.end(),
    closed,
  };
  return session;
};

const loginRefused = async (port: number, username: string, password: string, source = ENGINEER) => {
  try {
    const session = await sshThroughEntryPoint(port, username, password, source);
    session.end();
    return false;
  } catch {
    return true;
  }
};

const body = (extra: Record<string, unknown> = {}) => ({
  service: "ssh",
  level: "read",
  expire_after_minutes: 15,
  allow_from: ENGINEER,
  ...extra,
});

describe("temporary SSH access to a simulated router through the entry point", () => {
  it("opens, logs in with the shown password, reads, is refused a write, and is gone after revoke", async () => {
    const user = await login();
    const { id: routerId } = await makeRouter(db, user, { tunnelIp: TUNNEL });
    const created = await api("POST", `/api/routers/${routerId}/access`, user.token, body());
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.headers.get("cache-control")).toBe("no-store");
    const access = created.body.data;
    expect(access).toMatchObject({
      service: "ssh",
      level: "read",
      username: `fleet-tmp-${String(access.id).slice(0, 8)}`,
      entry_point: "localhost",
      allow_only_cidr: `${ENGINEER}/32`,
      expired: false,
      revoked_early: false,
      password: expect.stringMatching(/^[A-Za-z0-9]{24}$/),
    });
    await eventually(() => system.tunnelAgent.relay.listening().some((l) => l.id === access.id), "the relay");
    expect(router.ssh.users().find((u) => u.name === access.username)).toMatchObject({
      group: "fleet-read",
      address: "127.0.0.1",
    });
    expect(router.ssh.schedulerEntries()).toContain(access.username);

    const engineer = await sshThroughEntryPoint(access.port, access.username, access.password);
    expect(await engineer.run("/ip address print")).toContain("192.168.88.1/24");
    expect(await engineer.run("/ip address add address=10.9.9.1/24 interface=bridge")).toBe(
      "failure: not enough permissions (9)",
    );
    // A source outside allow_from never reaches the router.
    expect(await loginRefused(access.port, access.username, access.password, "9.9.9.9")).toBe(true);

    const listed = await api("GET", `/api/routers/${routerId}/access`, user.token);
    expect(listed.body.data).toHaveLength(1);
    expect(listed.body.data[0]).not.toHaveProperty("password");
    expect(JSON.stringify(listed.body)).not.toContain(access.password);
    const one = await api("GET", `/api/routers/${routerId}/access/${access.id}`, user.token);
    expect(one.body.data).toMatchObject({ id: access.id, port: access.port });

    expect((await api("DELETE", `/api/routers/${routerId}/access/${access.id}`, user.token)).status).toBe(204);
    await engineer.closed;
    await eventually(() => !router.ssh.users().some((u) => u.name === access.username), "the user to go");
    await settled();
    expect(router.ssh.schedulerEntries()).not.toContain(access.username);
    expect(await loginRefused(access.port, access.username, access.password)).toBe(true);
    expect((await api("GET", `/api/routers/${routerId}/access`, user.token)).body.data).toEqual([]);
    expect((await api("GET", `/api/routers/${routerId}/access/${access.id}`, user.token)).body.data).toMatchObject({
      revoked_early: true,
    });
    // The password went nowhere but the one answer.
    const dump =
      JSON.stringify(await db.query("select * from router_access")) +
      JSON.stringify(await db.query("select data from pgboss.job"));
    expect(dump).not.toContain(access.password);

    await system.tunnelAgent.flushAudit();
    const audit = await api("GET", `/api/audit-log?router_id=${routerId}`, user.token);
    const actions = audit.body.data.map((e: { action: string }) => e.action);
    expect(actions).toContain("router.access.created");
    expect(actions).toContain("router.access.revoked");
    // Connection entries as for forwards: the engineer's session, and the outsider turned away.
    const connections = audit.body.data.filter((e: { action: string }) =>
      e.action.startsWith("router.access.connection."),
    );
    expect(connections).toContainEqual(
      expect.objectContaining({
        action: "router.access.connection.accepted",
        target: { type: "router_access", id: access.id },
        source_ip: ENGINEER,
      }),
    );
    expect(connections).toContainEqual(
      expect.objectContaining({ action: "router.access.connection.denied", source_ip: "9.9.9.9" }),
    );
  });

  it("a full user's group is set back to exactly its policy, and the user cannot make itself permanent", async () => {
    const user = await login();
    const { id: routerId } = await makeRouter(db, user, { tunnelIp: TUNNEL_WIDENED });
    // The router's administrator widened fleet-full (an earlier session, or by hand).
    const admin = await new SshRouterOsConnector({
      username: "fleet",
      privateKey: adminKey.private,
      connectTimeoutMs: 5000,
      commandTimeoutMs: 5000,
      hostKeys: new InMemoryHostKeyStore(),
    }).connect({ routerId: "admin", host: TUNNEL_WIDENED, port: sshPort });
    await admin.exec('/user group add name="fleet-full" policy="read,ssh,write,policy,sensitive,password"');
    admin.close();
    const groupPolicy = () =>
      widened.ssh
        .groups()
        .find((g) => g.name === "fleet-full")
        ?.policy.join(",");
    expect(groupPolicy()).toContain("policy");

    const created = await api("POST", `/api/routers/${routerId}/access`, user.token, body({ level: "full" }));
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const access = created.body.data;
    await eventually(() => system.tunnelAgent.relay.listening().some((l) => l.id === access.id), "the relay");
    expect(widened.ssh.users().find((u) => u.name === access.username)).toMatchObject({ group: "fleet-full" });
    // CONTRACT 14: exactly this, never `policy`, `sensitive` or `password`.
    expect(groupPolicy()).toBe("read,winbox,ssh,web,test,write,reboot");

    const engineer = await sshThroughEntryPoint(access.port, access.username, access.password);
    expect(await engineer.run("/ip address add address=10.9.8.1/24 interface=bridge")).toBe("");
    const denied = "failure: not enough permissions (9)";
    expect(await engineer.run('/user add name=forever group=full password="x"')).toBe(denied);
    expect(
      await engineer.run(
        '/user group set [find where name="fleet-full"] policy="read,write,policy,sensitive,password"',
      ),
    ).toBe(denied);
    expect(await engineer.run(`/system scheduler remove [find where name="${access.username}"]`)).toBe(denied);
    expect(widened.ssh.users().map((u) => u.name)).toEqual([access.username]);
    expect(widened.ssh.schedulerEntries()).toEqual([access.username]);
    expect(groupPolicy()).toBe("read,winbox,ssh,web,test,write,reboot");
    engineer.end();
    expect((await api("DELETE", `/api/routers/${routerId}/access/${access.id}`, user.token)).status).toBe(204);
    await eventually(() => widened.ssh.users().length === 0, "the user to go");
    await settled();
  });

  it("expiry closes the session at its time, audited as router.access.expired, and queues the user's removal", async () => {
    const user = await login();
    const { id: routerId } = await makeRouter(db, user, { tunnelIp: "127.0.0.62" });
    // The router at 127.0.0.62 does not exist: only the database side of expiry is watched here.
    const created = await api("POST", `/api/routers/${routerId}/access`, user.token, body({ level: "full" }));
    expect(created.status).toBe(201);
    clock.advance(15 * 60_000 + 1_000);
    expect(await system.tunnelAgent.sweepAccess()).toBeGreaterThanOrEqual(1);
    const one = await api("GET", `/api/routers/${routerId}/access/${created.body.data.id}`, user.token);
    expect(one.body.data).toMatchObject({ expired: true, revoked_early: false });
    const audit = await api("GET", `/api/audit-log?action=router.access.expired&router_id=${routerId}`, user.token);
    expect(audit.body.data).toHaveLength(1);
    const [removal] = await db.query<{ n: number }>(
      "select count(*)::int as n from pgboss.job where name = 'router.jobs' and data->>'kind' = 'access.remove' and data->>'access_id' = $1",
      [created.body.data.id],
    );
    expect(removal?.n).toBe(1);
  });

  it("refuses bad input at and past its edges, another team's router and unknown ids, changing nothing", async () => {
    const owner = await login();
    const stranger = await login();
    await makeAccount(db, owner.organizationId);
    const { id: routerId } = await makeRouter(db, owner, { tunnelIp: "127.0.0.63" });
    const base = `/api/routers/${routerId}/access`;
    // An earlier case's SSH session through the entry point is audited when it ends, on its own
    // time: the refusals below are judged on every other audit entry.
    const auditedRefusable = async () =>
      (
        await db.query<{ n: number }>(
          "select count(*)::int as n from audit_log where action not like 'router.access.connection.%'",
        )
      )[0]?.n;
    const auditBefore = await auditedRefusable();
    const before = await databaseFingerprint(db);
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ["level", body({ level: "admin" }), "level"],
      ["service", body({ service: "telnet" }), "service"],
      ["14 minutes", body({ expire_after_minutes: 14 }), "expire_after_minutes"],
      ["1441 minutes", body({ expire_after_minutes: 1441 }), "expire_after_minutes"],
      ["fractional minutes", body({ expire_after_minutes: 15.5 }), "expire_after_minutes"],
      ["minutes as text", body({ expire_after_minutes: "15" }), "expire_after_minutes"],
      ["private allow_from", body({ allow_from: "10.0.0.1" }), "allow_from"],
      ["/23 allow_from", body({ allow_from: "8.8.8.0/23" }), "allow_from"],
      ["missing allow_from", { service: "ssh", level: "read", expire_after_minutes: 15 }, "allow_from"],
    ];
    for (const [what, payload, field] of cases) {
      const res = await api("POST", base, owner.token, payload);
      expect(res.status, what).toBe(422);
      expect(Object.keys(res.body.data ?? {}), what).toContain(field);
    }
    expect((await api("POST", base, stranger.token, body())).status).toBe(404);
    expect((await api("GET", base, stranger.token)).status).toBe(404);
    expect((await api("GET", `${base}/${crypto.randomUUID()}`, owner.token)).status).toBe(404);
    expect((await api("DELETE", `${base}/${crypto.randomUUID()}`, owner.token)).status).toBe(404);
    // The heartbeat daemon's bookkeeping moves on its own schedule (each sweep tick marks `heartbeat_daemons`).
    const strip = (f: string) =>
      f
        .split(",")
        .filter(
          (t) =>
            !t.startsWith("heartbeat_coverage:") && !t.startsWith("heartbeat_daemons:") && !t.startsWith("audit_log:"),
        );
    expect(strip(await databaseFingerprint(db))).toEqual(strip(before));
    expect(await auditedRefusable()).toBe(auditBefore);

    // The edges themselves are accepted, and the quota counts access with forwards.
    for (const minutes of [15, 1440]) {
      expect((await api("POST", base, owner.token, body({ expire_after_minutes: minutes }))).status).toBe(201);
    }
    expect((await api("POST", base, owner.token, body({ allow_from: "8.8.8.0/24", service: "winbox" }))).status).toBe(
      201,
    );
    const client = createClient({ url: system.api.url, token: owner.token });
    const viaTrpc = await client.access.create.mutate({ router_id: routerId, ...body({ service: "webfig" }) } as never);
    expect(viaTrpc.data.password).toMatch(/^[A-Za-z0-9]{24}$/);
    expect((await client.access.list.query({ router_id: routerId })).data).toHaveLength(4);
    await client.access.revoke.mutate({ router_id: routerId, id: viaTrpc.data.id });
    expect((await client.access.get.query({ router_id: routerId, id: viaTrpc.data.id })).data.revoked_early).toBe(true);

    // 3 access sessions are active: 17 forwards make 20 on the router, and both kinds then answer 429.
    const forward = {
      expire_after_minutes: 60,
      dst_port: 22,
      dst_address: "192.168.88.10",
      allow_from: "8.8.8.0/24",
    };
    for (let i = 0; i < 17; i++) {
      expect((await api("POST", `/api/routers/${routerId}/transient-forwarding`, owner.token, forward)).status).toBe(
        201,
      );
    }
    const fullForward = await api("POST", `/api/routers/${routerId}/transient-forwarding`, owner.token, forward);
    expect(fullForward.status).toBe(429);
    const fullAccess = await api("POST", base, owner.token, body());
    expect(fullAccess.status).toBe(429);
    expect(fullAccess.headers.get("retry-after")).toMatch(/^\d+$/);
  });
});
