/**
 * `node bench/health-write-bench.ts [--routers 200] [--interval-ms 3000] [--flush-ms 250] [--sample-s 30] [--periods 10] [--rounds 3]`:
 * the daemon's CPU for the health part of its flushes (docs/scale.md "Health samples"), without
 * sockets or parsing: routers report resources, 8 interfaces and a ping (as phase 8 of
 * heartbeat-bench.ts sends them) to a HealthTracker, and every `--flush-ms` the tracker is drained
 * and written through the repositories the daemon uses, on PostgreSQL (DATABASE_URL, default
 * postgres://postgres@127.0.0.1:5432/postgres; a fresh database is created and dropped). Prints
 * this process's CPU (all threads) per flush of latest values only, per sample period's boundary
 * flush, and per heartbeat, min / median / max over the rounds. The flush's liveness statement is
 * not included (bench/flush-statement-bench.ts).
 */
import { HealthSeriesRepository, openDatabase, queryOf, RouterHealthRepository } from "@fleet/db";
import { ManualClock, readPlainHeartbeat, type THeartbeatFrame } from "@fleet/shared";
import pg from "pg";
import { HealthTracker } from "@fleet/heartbeat-daemon/health-tracker";

const argv = process.argv.slice(2);
const opt = (name: string, fallback: number): number => {
  const i = argv.indexOf(`--${name}`);
  return i < 0 ? fallback : Number(argv[i + 1]);
};
const ROUTERS = opt("routers", 200);
const INTERVAL_MS = opt("interval-ms", 3000);
const FLUSH_MS = opt("flush-ms", 250);
const SAMPLE_S = opt("sample-s", 30);
const PERIODS = opt("periods", 10);
const ROUNDS = opt("rounds", 3);
const BASE_URL = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

const dbName = `bench_health_write_${Date.now().toString(36)}`;
const admin = new pg.Client({ connectionString: BASE_URL });
await admin.connect();
await admin.query(`create database "${dbName}"`);
const url = new URL(BASE_URL);
url.pathname = `/${dbName}`;
const db = await openDatabase({ databaseUrl: url.toString(), dataDir: "memory", poolSize: 4 });

const IFACES = ["ether1", "ether2", "ether3", "ether4", "ether5", "sfp-sfpplus1", "wg0", "vlan10"];
/** Phase 8's heartbeat (bench/heartbeat-bench-load.ts), read as the daemon reads it. */
const report = (index: number, t: number): THeartbeatFrame =>
  readPlainHeartbeat({
    type: "heartbeat",
    resources: {
      cpu_load: `${(index + t) % 37}.000000`,
      memory_total: 1073741824,
      memory_free: 536870912 - ((index * 4096) % 65536),
      disk_total: 134217728,
      disk_free: 67108864,
      temperature: `${40 + (index % 7)}.000000`,
      voltage: 24.1,
    },
    interfaces: IFACES.map((name, k) => ({
      name,
      rx_bytes: t * (1000 + k) + index,
      tx_bytes: t * (500 + k),
      rx_errors: 0,
      tx_errors: 0,
      running: true,
    })),
    ping: { target: "10.255.0.1", sent: 5, received: 5, rtt_avg_ms: "1.200000", rtt_max_ms: 2 },
  }) as THeartbeatFrame;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
const line = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return `${(s[0] ?? 0).toFixed(1)} / **${median(s).toFixed(1)}** / ${(s.at(-1) ?? 0).toFixed(1)}`;
};

try {
  await db.migrate();
  const org = crypto.randomUUID();
  const team = crypto.randomUUID();
  await db.query("insert into organizations (id, name, created_at) values ($1, 'bench', now())", [org]);
  await db.query(
    "insert into teams (id, organization_id, name, is_default, created_at) values ($1, $2, 'bench', true, now())",
    [team, org],
  );
  await db.query(
    `insert into routers (id, organization_id, team_id, name, heartbeat_token_hash, created_at)
     select (lpad(to_hex(i), 8, '0') || '-0000-4000-8000-000000000000')::uuid, $1, $2, 'bench ' || i, md5(i::text), now()
     from generate_series(0, $3) as i`,
    [org, team, ROUTERS - 1],
  );
  const routerId = (i: number) => `${i.toString(16).padStart(8, "0")}-0000-4000-8000-000000000000`;
  const series = new HealthSeriesRepository(db);
  const query = queryOf(db);
  const flushesPerInterval = Math.max(1, Math.round(INTERVAL_MS / FLUSH_MS));
  const perFlush = Math.ceil(ROUTERS / flushesPerInterval);
  const warmup = Math.ceil((2 * SAMPLE_S * 1000) / FLUSH_MS);
  const measuredFlushes = Math.ceil((PERIODS * SAMPLE_S * 1000) / FLUSH_MS);
  const latestUs: number[] = [];
  const boundaryUs: number[] = [];
  const perHeartbeatUs: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const clock = new ManualClock(Date.UTC(2026, 10, 29 + round));
    const tracker = new HealthTracker({ sampleSeconds: SAMPLE_S, clock });
    let latest = 0;
    let latestCount = 0;
    let boundary = 0;
    let boundaries = 0;
    let beats = 0;
    for (let f = 0; f < warmup + measuredFlushes; f++) {
      clock.advance(FLUSH_MS);
      const t = Math.floor(clock.nowMs() / 1000);
      const from = (f % flushesPerInterval) * perFlush;
      for (let i = from; i < Math.min(ROUTERS, from + perFlush); i++) {
        tracker.observe(routerId(i), clock.nowMs(), report(i, t));
        if (f >= warmup) beats++;
      }
      // The writer's #writeHealth and the wiring's write (wiring/heartbeats.wiring.ts).
      const c0 = process.cpuUsage();
      const flush = tracker.drain();
      await RouterHealthRepository.upsertLatest(query, flush.latest);
      await HealthSeriesRepository.upsertInterfaces(query, flush.interfaces);
      await series.append(query, flush);
      const c = process.cpuUsage(c0);
      if (f < warmup) continue;
      if (flush.trafficSamples.length > 0) {
        boundary += c.user + c.system;
        boundaries++;
      } else {
        latest += c.user + c.system;
        latestCount++;
      }
    }
    latestUs.push(latest / Math.max(1, latestCount));
    boundaryUs.push(boundary / Math.max(1, boundaries));
    perHeartbeatUs.push((latest + boundary) / Math.max(1, beats));
  }
  process.stdout.write(
    `health writes: ${ROUTERS} routers every ${INTERVAL_MS} ms, a flush every ${FLUSH_MS} ms, samples every ${SAMPLE_S} s; CPU of this process (µs), min / median / max of ${ROUNDS}\n` +
      `| per flush of latest values only | ${line(latestUs)} |\n` +
      `| per sample period's boundary flush | ${line(boundaryUs)} |\n` +
      `| per heartbeat | ${line(perHeartbeatUs)} |\n`,
  );
} finally {
  await db.close();
  await admin.query(`drop database "${dbName}"`);
  await admin.end();
}
