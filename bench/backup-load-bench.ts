import { startTestSystem } from "@fleet/all-in-one/testing";
/**
 * `node bench/backup-load-bench.ts [--seconds 30]`: does one tenant's heaviest backup work stall
 * another tenant (docs/api.md "Configuration backups")? The all-in-one system in this process
 * (PGlite in memory, or a scratch database with DATABASE_URL); two hostile simulated routers in
 * child processes (their own CPU, as real routers): one answers `/export terse` with 100 MB, one
 * with 8,001 lines that all change on every read. The attacking tenant asks for backups of both
 * again and again and diffs two stored 8,001-line versions that differ in every line, while another
 * tenant's router beats over WebSocket every 200 ms and that tenant calls `GET /api/routers` every
 * 200 ms. Prints the other tenant's ack and call latencies (max, p99) and what the attacks got.
 * Target: acks within 2 s, calls within 1 s. `--idle` runs the same measurement without the attacks
 * (the machine's own baseline); the event loop's delay (perf_hooks) is printed beside.
 */
import { spawn } from "node:child_process";
import net from "node:net";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { loadAllInOneConfig } from "@fleet/all-in-one";
import { ConfigBackupsRepository, queryOf } from "@fleet/db";
import { createTestDatabase, makeRouter } from "@fleet/db/testing";
import { startSimulatedRouterOs } from "@fleet/router-simulator/routeros/simulated-routeros";
import { digestConfigExport } from "@fleet/shared";
import pino from "pino";
import WebSocket from "ws";

const { values } = parseArgs({
  options: {
    seconds: { type: "string", default: "30" },
    idle: { type: "boolean", default: false },
    router: { type: "string" },
    ip: { type: "string" },
    port: { type: "string" },
    key: { type: "string" },
  },
});

const lines = (tag: string) =>
  Array.from({ length: 8_001 }, (_, i) => `add chain=forward action=accept comment="rule ${i} ${tag}"`);
const exportOf = (body: string[]) => ["# 2026-11-29 00:00:00 by RouterOS 7.16.2", ...body, ""].join("\r\n");

if (values.router) {
  // Child: one hostile router.
  const huge = `${"/system note set note=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\r\n".repeat(1_200_000)}`;
  let reads = 0;
  await startSimulatedRouterOs({
    tunnelIp: values.ip ?? "",
    sshPort: Number(values.port),
    sshUser: "fleet",
    authorizedKeys: [values.key ?? ""],
    exportText: values.router === "huge" ? () => huge : () => exportOf(lines(`read-${++reads}`)),
  });
  process.stdout.write("ready\n");
} else {
  await parent();
}

async function parent(): Promise<void> {
  const seconds = Number(values.seconds);
  const HUGE_IP = "127.0.0.61";
  const BIG_IP = "127.0.0.62";
  const sshPort = await new Promise<number>((resolve) => {
    const probe = net.createServer().listen(0, HUGE_IP, () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
  const db = await createTestDatabase();
  const config = loadAllInOneConfig({
    PORT: "0",
    HEARTBEAT_PORT: "0",
    STRIPE_EMULATOR_PORT: "0",
    DATA_DIR: "memory",
    LOG_LEVEL: "silent",
    AUTH_DEV_LOGIN: "true",
    JWT_SECRET: `bench-${crypto.randomUUID()}`,
    RATE_LIMIT_PER_MINUTE: "100000",
    RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: "100000",
    ENTRY_POINT_PORTS: "63900-63909",
    TUNNEL_SSH_PORT: String(sshPort),
    TUNNEL_SSH_USER: "fleet",
    TUNNEL_NETWORK: "127.0.0.0/8",
    BACKUP_INTERVAL_HOURS: "0",
  });
  const system = await startTestSystem({ config, logger: pino({ level: "silent" }), db });
  const children = ["huge", "big"].map((kind) =>
    spawn(
      process.execPath,
      [
        new URL(import.meta.url).pathname,
        "--router",
        kind,
        "--ip",
        kind === "huge" ? HUGE_IP : BIG_IP,
        "--port",
        String(sshPort),
        "--key",
        system.tunnelAgent.publicKey,
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    ),
  );
  await Promise.all(
    children.map(
      (child) =>
        new Promise<void>((resolve) => child.stdout?.on("data", (d: Buffer) => d.includes("ready") && resolve())),
    ),
  );

  const api = system.api.url;
  const login = async (email: string) => {
    const res = await fetch(`${api}/v1/auth/dev-login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email }),
    });
    const body = (await res.json()) as { access_token: string; organization_id: string; team_id: string };
    return { token: body.access_token, organizationId: body.organization_id, teamId: body.team_id };
  };
  const attacker = await login("attacker@example.com");
  const victim = await login("victim@example.com");
  const huge = await makeRouter(db, attacker, { tunnelIp: HUGE_IP });
  const big = await makeRouter(db, attacker, { tunnelIp: BIG_IP });
  const repo = new ConfigBackupsRepository(queryOf(db));
  const store = async (content: string, at: number) => {
    const read = { routerId: big.id, content, ...digestConfigExport(content), retention: 100 };
    const stored = await repo.insertIfNewest(
      (await repo.latest(big.id))?.id ?? null,
      { ...read, at: new Date(Date.UTC(2026, 10, 1) + at) },
      { added: 0, removed: 0 },
    );
    if (!stored) throw new Error("not stored");
    return stored;
  };
  await store(exportOf(lines("a")), 0);
  const newer = await store(exportOf(lines("b")), 1_000);
  const mine = await makeRouter(db, victim);

  const ws = new WebSocket(system.heartbeat.wsUrl, { headers: { authorization: `Bearer ${mine.heartbeatToken}` } });
  await new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject));
  const acks: number[] = [];
  const calls: number[] = [];
  let sentAt = 0;
  ws.on("message", () => acks.push(performance.now() - sentAt));

  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  const until = performance.now() + seconds * 1000;
  const outcomes = new Map<string, number>();
  const count = (what: string) => outcomes.set(what, (outcomes.get(what) ?? 0) + 1);
  const attack = async (what: string, method: string, path: string, pause: number) => {
    while (performance.now() < until) {
      const res = await fetch(`${api}${path}`, { method, headers: { authorization: `Bearer ${attacker.token}` } });
      await res.arrayBuffer();
      count(`${what} ${res.status}`);
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  };
  const beat = async () => {
    while (performance.now() < until) {
      sentAt = performance.now();
      ws.send(JSON.stringify({ type: "heartbeat", uptime: 100 }));
      const started = performance.now();
      const res = await fetch(`${api}/api/routers`, { headers: { authorization: `Bearer ${victim.token}` } });
      await res.arrayBuffer();
      calls.push(performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  };
  const attacks = values.idle
    ? []
    : [
        attack("backup of the 100 MB router", "POST", `/api/routers/${huge.id}/backups`, 1_000),
        attack("backup of the 8,001-line router", "POST", `/api/routers/${big.id}/backups`, 1_000),
        attack("diff of two 8,001-line versions", "GET", `/api/routers/${big.id}/backups/${newer.id}/diff`, 0),
      ];
  await Promise.all([...attacks, beat()]);
  loop.disable();
  const [versions] = await db.query<{ n: number }>(
    "select count(*)::int as n from router_config_backups where router_id = $1",
    [big.id],
  );
  const [failure] = await db.query<{ reason: string }>(
    "select failure_reason as reason from router_backup_states where router_id = $1",
    [huge.id],
  );
  const stats = (xs: number[]) => {
    const sorted = [...xs].sort((a, b) => a - b);
    const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
    return `n=${xs.length} p50=${at(0.5).toFixed(1)} ms p99=${at(0.99).toFixed(1)} ms max=${at(1).toFixed(1)} ms`;
  };
  console.log(`other tenant's heartbeat acks: ${stats(acks)}`);
  console.log(`other tenant's GET /api/routers: ${stats(calls)}`);
  console.log(
    `event loop delay: p99=${(loop.percentile(99) / 1e6).toFixed(1)} ms max=${(loop.max / 1e6).toFixed(1)} ms`,
  );
  for (const [what, n] of outcomes) console.log(`attack: ${what} x${n}`);
  console.log(`versions of the 8,001-line router stored: ${versions?.n}`);
  console.log(`100 MB router's last_failure: ${failure?.reason ?? "none"}`);
  ws.close();
  for (const child of children) child.kill();
  await system.close();
  await db.close();
}
