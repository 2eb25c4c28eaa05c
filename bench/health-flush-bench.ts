/**
 * `node bench/health-flush-bench.ts [--routers 2000] [--interval-ms 30000] [--flush-ms 1000] [--periods 2] [--rounds 3]`:
 * the daemon's flushes alone (HeartbeatWriter, HealthTracker and the wiring's health writes, as
 * `startHeartbeat` builds them) against PostgreSQL (DATABASE_URL, default
 * postgres://postgres@127.0.0.1:5432/postgres; a fresh database is created and dropped), on
 * simulated time: each flush takes the heartbeats of `--flush-ms` of a fleet of `--routers` beating
 * every `--interval-ms`, with resources, 8 interfaces and a ping as the daemon bench's load sends
 * them (or none: `--plain 1`), one sample per RESOURCE_SAMPLE_SECONDS (10 heartbeats by default).
 * Flushes run back to back, so `--periods` sample periods take seconds, not minutes. Prints the
 * bench database's backends' CPU per heartbeat (Linux /proc), min / median / max over the rounds,
 * transactions (statements) per flush and the HOT share of the rows updated. Sweeps, token lookups and the
 * transport are not in it: phase 8 of `npm run bench:heartbeat` measures the whole daemon.
 */
import { readFile } from "node:fs/promises";
import { HeartbeatsRepository, type HeartbeatWrite, openDatabase } from "@fleet/db";
import { hashHeartbeatToken, ManualClock } from "@fleet/shared";
import pg from "pg";
import { BENCH_INTERFACES, seedBenchFleet } from "./lib/bench-fleet.ts";
import pino from "pino";
import { HealthTracker } from "@fleet/heartbeat-daemon/heartbeats/health-tracker";
import { HeartbeatWriter } from "@fleet/heartbeat-daemon/heartbeats/heartbeat-writer";
import { healthWrite } from "@fleet/heartbeat-daemon/wiring/heartbeats.wiring";

const argv = process.argv.slice(2);
const opt = (name: string, fallback: number): number => {
  const i = argv.indexOf(`--${name}`);
  return i < 0 ? fallback : Number(argv[i + 1]);
};
const ROUTERS = opt("routers", 2_000);
const INTERVAL = opt("interval-ms", 30_000);
const FLUSH_MS = opt("flush-ms", 1_000);
const PERIODS = opt("periods", 2);
const ROUNDS = opt("rounds", 3);
const PLAIN = opt("plain", 0) > 0;
const SAMPLE_S = Number(process.env.RESOURCE_SAMPLE_SECONDS ?? Math.round((INTERVAL * 10) / 1000));
const BASE_URL = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const RUN = Date.now().toString(36);
const dbName = `bench_hflush_${RUN}`;
const IFACES = BENCH_INTERFACES;

const admin = new pg.Client({ connectionString: BASE_URL });
await admin.connect();
await admin.query(`create database "${dbName}"`);
const url = new URL(BASE_URL);
url.pathname = `/${dbName}`;
const db = await openDatabase({ databaseUrl: url.toString(), dataDir: "memory", poolSize: 4 });
try {
  await db.migrate();
  const { ids } = await seedBenchFleet(db, ROUTERS, `hflush_${RUN}`);
  const hashes = Array.from({ length: ROUTERS }, (_, i) => hashHeartbeatToken(`hb_hflush_${RUN}_${i}`));
  const clock = new ManualClock(Date.UTC(2026, 10, 30, 0, 0, 0));
  const tracker = new HealthTracker({ sampleSeconds: SAMPLE_S, clock });
  const writer = new HeartbeatWriter({
    store: new HeartbeatsRepository(db),
    health: PLAIN ? undefined : { tracker, write: healthWrite(db) },
    resumption: { resumed: async () => {} },
    intervalMs: INTERVAL,
    missedHeartbeats: 10,
    // Flushed by hand below, never by the writer's timer.
    flushIntervalMs: 1e9,
    steadyFlushMs: 1e9,
    maxBatchRows: 1e9,
    logger: pino({ level: "warn" }),
    onGone: () => {},
    onReplaced: () => {},
    now: () => clock.nowMs(),
  });
  const beat = (i: number, atMs: number) => {
    const t = Math.floor(atMs / 1000);
    const write: HeartbeatWrite = {
      routerId: ids[i] as string,
      tokenHash: hashes[i] as string,
      seenAt: new Date(atMs),
      peer: "127.3.0.1",
      identity: `bench-${i}`,
      serialNumber: `BENCH${i}`,
      softwareVersion: "7.16.2",
      softwareId: "BNCH-0001",
      model: "RB5009UG+S+",
      boardName: "RB5009UG+S+",
      hardwareboard: true,
      uptimeSeconds: 86_400 + t,
    };
    writer.enqueue(write, atMs - INTERVAL);
    if (PLAIN) return;
    // The values heartbeat-bench-load.ts sends (its `healthBody`), parsed.
    writer.observeHealth(ids[i] as string, atMs, {
      resources: {
        cpu_load: (i + t) % 37,
        memory_total: 1073741824,
        memory_free: 536870912 - ((i * 4096) % 65536),
        disk_total: 134217728,
        disk_free: 67108864,
        temperature: 40 + (i % 7),
        voltage: 24.1,
      },
      interfaces: IFACES.map((name, k) => ({
        name,
        rx_bytes: t * (1000 + k) + i,
        tx_bytes: t * (500 + k),
        rx_errors: 0,
        tx_errors: 0,
        running: true,
      })),
      ping: { target: "10.255.0.1", sent: 5, received: 5, rtt_avg_ms: 1.2, rtt_max_ms: 2 },
    });
  };
  // Router i beats at phase (i / ROUTERS) of the interval; each step is one flush window.
  let heartbeats = 0;
  const step = async () => {
    const from = clock.nowMs();
    clock.advance(FLUSH_MS);
    const to = clock.nowMs();
    for (let i = 0; i < ROUTERS; i++) {
      const phase = Math.floor((i * INTERVAL) / ROUTERS);
      const first = from - ((((from - phase) % INTERVAL) + INTERVAL) % INTERVAL) + INTERVAL;
      for (let at = first; at < to; at += INTERVAL) {
        beat(i, at);
        heartbeats++;
      }
    }
    await writer.flush();
  };
  const stepsPerPeriod = Math.ceil((SAMPLE_S * 1000) / FLUSH_MS);
  // Warm-up: every router's first heartbeat, then one whole period (plans, the first samples).
  for (let k = 0; k < stepsPerPeriod + INTERVAL / FLUSH_MS; k++) await step();
  await db.query("vacuum (analyze)");
  const backends = async () => {
    const rows = await admin.query<{ pid: number }>("select pid from pg_stat_activity where datname = $1", [dbName]);
    let ticks = 0;
    for (const { pid } of rows.rows) {
      const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => "");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (stat) ticks += Number(fields[11]) + Number(fields[12]);
    }
    return ticks;
  };
  // Each flush statement runs in its own implicit transaction: transactions per flush = statements.
  const statements = async () =>
    Number(
      (
        await admin.query<{ n: string }>(
          "select (xact_commit + xact_rollback)::text as n from pg_stat_database where datname = $1",
          [dbName],
        )
      ).rows[0]?.n ?? Number.NaN,
    );
  const tupleStats = async () =>
    (
      await db.query<{ relname: string; upd: string; hot: string }>(
        "select relname, n_tup_upd::text as upd, n_tup_hot_upd::text as hot from pg_stat_user_tables where n_tup_upd > 0",
      )
    ).map((r) => ({ relname: r.relname, upd: Number(r.upd), hot: Number(r.hot) }));
  const hot0 = await tupleStats();
  const perHb: number[] = [];
  let flushes = 0;
  const s0 = await statements();
  for (let round = 0; round < ROUNDS; round++) {
    const t0 = await backends();
    const h0 = heartbeats;
    for (let k = 0; k < PERIODS * stepsPerPeriod; k++) await step();
    flushes += PERIODS * stepsPerPeriod;
    const t1 = await backends();
    perHb.push(((t1 - t0) * 10_000) / (heartbeats - h0));
    // As autovacuum would between rounds.
    await db.query("vacuum router_liveness, router_interfaces_state");
  }
  await new Promise((resolve) => setTimeout(resolve, 1_500)); // the backends' statistics are flushed
  const s1 = await statements();
  const hot1 = await tupleStats();
  const sorted = [...perHb].sort((a, b) => a - b);
  const f = (n: number | undefined) => (n ?? Number.NaN).toFixed(1);
  const hot = hot1
    .map((r) => {
      const before = hot0.find((x) => x.relname === r.relname);
      const upd = r.upd - (before?.upd ?? 0);
      return upd > 0 ? `${r.relname} ${(((r.hot - (before?.hot ?? 0)) / upd) * 100).toFixed(0)}% of ${upd}` : "";
    })
    .filter((x) => x !== "")
    .join(", ");
  process.stdout.write(
    `${PLAIN ? "plain" : "health"}: ${ROUTERS} routers every ${INTERVAL / 1000} s, a flush per ${FLUSH_MS} ms (${f((ROUTERS * FLUSH_MS) / INTERVAL)} rows), samples every ${SAMPLE_S} s, ${PERIODS} period(s) x ${ROUNDS} rounds: PostgreSQL backends' CPU per heartbeat ${f(sorted[0])} / **${f(sorted[Math.floor(sorted.length / 2)])}** / ${f(sorted.at(-1))} µs; transactions per flush ${f((s1 - s0 - ROUNDS) / flushes)}; HOT updates: ${hot}\n`,
  );
  await writer.close();
} finally {
  await db.close();
  await admin.query(`drop database if exists "${dbName}" with (force)`);
  await admin.end();
}
