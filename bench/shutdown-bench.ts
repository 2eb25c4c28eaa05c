/**
 * `node bench/shutdown-bench.ts [--routers N] [--inflight N]` (docs/operations.md "Signals"): the
 * all-in-one process on PostgreSQL (DATABASE_URL; a fresh database is created and dropped) with N
 * routers connected over WebSocket, each having sent one heartbeat, then
 *  - `/metrics` scrape time (median of 5) and series count,
 *  - SIGTERM to the process while `--inflight` API requests are held open mid-body: time until it
 *    exited, its exit code, how many of those requests were answered, and whether the last
 *    heartbeats were written.
 * Timings are printed, never asserted.
 */
import { spawn } from "node:child_process";
import { request } from "node:http";
import path from "node:path";
import { openDatabase } from "@fleet/db";
import { createTestDatabase, makeUser } from "@fleet/db/testing";
import { generateEd25519KeyPair } from "@fleet/shared";
import { createHash } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import WebSocket from "ws";

const argv = process.argv.slice(2);
const opt = (name: string, fallback: number) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? Number(argv[i + 1]) : fallback;
};
const ROUTERS = opt("routers", 10_000);
const INFLIGHT = opt("inflight", 50);
const root = path.resolve(import.meta.dirname, "..");

const db = await createTestDatabase();
if (!db.url) throw new Error("set DATABASE_URL (PostgreSQL)");
const owner = await makeUser(db);
const tokens: string[] = [];
for (let start = 0; start < ROUTERS; start += 1000) {
  const ids: string[] = [];
  const hashes: string[] = [];
  const ips: string[] = [];
  for (let i = start; i < Math.min(ROUTERS, start + 1000); i++) {
    const token = `hb_${crypto.randomUUID().replaceAll("-", "")}`;
    tokens.push(token);
    ids.push(crypto.randomUUID());
    hashes.push(createHash("sha256").update(token).digest("hex"));
    ips.push(`100.64.${Math.floor(i / 250)}.${(i % 250) + 1}`);
  }
  await db.query(
    `insert into routers (id, organization_id, team_id, name, heartbeat_token_hash, tunnel_ip, created_at)
     select id, $1, $2, 'bench', h, ip, now() from unnest($3::uuid[], $4::text[], $5::text[]) as t(id, h, ip)`,
    [owner.organizationId, owner.teamId, ids, hashes, ips],
  );
}

const dir = mkdtempSync(path.join(tmpdir(), "fleet-shutdown-bench-"));
writeFileSync(path.join(dir, "key"), generateEd25519KeyPair().private, { mode: 0o600 });
const child = spawn(process.execPath, [path.join(root, "apps/all-in-one/src/main.ts")], {
  cwd: root,
  env: {
    PATH: process.env.PATH ?? "",
    DATABASE_URL: db.url,
    DATA_DIR: dir,
    PORT: "3610",
    HEARTBEAT_PORT: "3611",
    STRIPE_EMULATOR_PORT: "3612",
    ENTRY_POINT_PORTS: "62600-62609",
    LOG_LEVEL: "warn",
    AUTH_DEV_LOGIN: "true",
    JWT_SECRET: "b".repeat(40),
  },
  stdio: ["ignore", "ignore", "pipe"],
});
let stderr = "";
child.stderr?.on("data", (c: Buffer) => {
  stderr += c.toString();
});
const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
for (let i = 0; i < 600 && !/API\s+http/.test(stderr); i++) await new Promise((r) => setTimeout(r, 100));
const api = "http://127.0.0.1:3610";

let connected = 0;
const sockets: WebSocket[] = [];
const batch = 200;
for (let start = 0; start < tokens.length; start += batch) {
  await Promise.all(
    tokens.slice(start, start + batch).map(
      (token) =>
        new Promise<void>((resolve) => {
          const ws = new WebSocket("ws://127.0.0.1:3611/v1/heartbeat", {
            headers: { authorization: `Bearer ${token}` },
          });
          sockets.push(ws);
          ws.on("error", () => resolve());
          ws.once("message", () => {
            connected += 1;
            resolve();
          });
          ws.on("open", () => ws.send(JSON.stringify({ type: "heartbeat", identity: "bench" })));
        }),
    ),
  );
}
console.log(`connected and acknowledged: ${connected} routers`);

const scrapes: number[] = [];
let series = 0;
let bytes = 0;
for (let i = 0; i < 5; i++) {
  const t = performance.now();
  const text = await (await fetch(`${api}/metrics`)).text();
  scrapes.push(performance.now() - t);
  series = text.split("\n").filter((l) => l !== "" && !l.startsWith("#")).length;
  bytes = text.length;
}
scrapes.sort((a, b) => a - b);
console.log(
  `/metrics: median ${scrapes[2]?.toFixed(1)} ms (min ${scrapes[0]?.toFixed(1)}, max ${scrapes[4]?.toFixed(1)}), ${series} series, ${bytes} bytes`,
);

// Requests held in flight: headers and half a body sent.
const pending = Array.from({ length: INFLIGHT }, (_, i) => {
  const body = JSON.stringify({ email: `inflight-${i}@example.com` });
  const req = request(`${api}/v1/auth/dev-login`, {
    method: "POST",
    headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
  });
  const answered = new Promise<number>((resolve) => {
    req.on("response", (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.on("error", () => resolve(0));
  });
  req.write(body.slice(0, 5));
  return { finish: () => req.end(body.slice(5)), answered };
});
await new Promise((r) => setTimeout(r, 200));
const began = performance.now();
child.kill("SIGTERM");
await new Promise((r) => setTimeout(r, 100));
for (const p of pending) p.finish();
const statuses = await Promise.all(pending.map((p) => p.answered));
const code = await exited;
const took = performance.now() - began;
const check = await openDatabase({ databaseUrl: db.url, dataDir: "memory", poolSize: 1 });
const [written] = await check.query<{ n: number }>(
  "select count(*)::int as n from routers r join router_liveness l on l.router_id = r.id where r.identity = 'bench' and l.last_seen_at is not null",
);
await check.close();
console.log(
  `SIGTERM with ${connected} routers and ${INFLIGHT} requests in flight: exit ${code} after ${took.toFixed(0)} ms; ` +
    `${statuses.filter((s) => s > 0).length}/${INFLIGHT} requests answered (${statuses.filter((s) => s === 200).length} with 200, the rest 429: dev-login allows 10 a minute); heartbeats written for ${written?.n ?? 0}/${ROUTERS} routers`,
);
for (const ws of sockets) ws.terminate();
await db.close();
