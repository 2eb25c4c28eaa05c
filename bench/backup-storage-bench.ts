/**
 * `node bench/backup-storage-bench.ts`: what configuration backups cost in storage per router and
 * day (docs/api.md "Configuration backups"). One router, a realistic export (--lines, default 400
 * lines, about 25 KB, as `/export terse` of a small office router), read once a day
 * (BACKUP_INTERVAL_HOURS=24) for --days days (default 30): first with nothing changed between reads,
 * then with one line changed each day. Prints the table's size growth per day after VACUUM. With
 * DATABASE_URL a scratch database is created on that server and dropped; else PGlite in memory.
 */
import { parseArgs } from "node:util";
import { createTestDatabase } from "@fleet/db/testing";
import { digestConfigExport } from "@fleet/shared";
import { storeConfigRead } from "@fleet/tunnel-agent";

const { values } = parseArgs({
  options: { lines: { type: "string", default: "400" }, days: { type: "string", default: "30" } },
});
const LINES = Number(values.lines);
const DAYS = Number(values.days);
const DAY_MS = 86_400_000;

const db = await createTestDatabase();
const [org] = await db.query<{ id: string }>(
  "insert into organizations (id, name, created_at) values (gen_random_uuid(), 'bench', now()) returning id",
);
const [team] = await db.query<{ id: string }>(
  "insert into teams (id, organization_id, name, is_default, created_at) values (gen_random_uuid(), $1, 'bench', true, now()) returning id",
  [org?.id],
);
const [router] = await db.query<{ id: string }>(
  "insert into routers (id, organization_id, team_id, name, heartbeat_token_hash, created_at) values (gen_random_uuid(), $1, $2, 'r', md5('r'), now()) returning id",
  [org?.id, team?.id],
);
const routerId = router?.id ?? "";
const exportOf = (day: number, changed: number) => {
  const at = new Date(Date.UTC(2026, 0, 1) + day * DAY_MS).toISOString().slice(0, 19).replace("T", " ");
  const body = Array.from({ length: LINES }, (_, i) =>
    i < changed
      ? `add chain=forward action=accept src-address=10.${i % 250}.${day % 250}.0/24 comment="rule ${i} v${day}"`
      : `add chain=forward action=accept protocol=tcp dst-port=${1000 + i} src-address=192.168.${i % 250}.0/24 comment="office rule ${i}"`,
  );
  return [`# ${at} by RouterOS 7.16.2`, "# software id = ABCD-1234", "/ip firewall filter", ...body].join("\r\n");
};
const size = async () => {
  await db.query("vacuum full router_config_backups");
  const [row] = await db.query<{ n: number | string }>(
    "select pg_total_relation_size('router_config_backups')::bigint as n",
  );
  return Number(row?.n ?? 0);
};
const countLines = () => ({ added: 1, removed: 1 });
const read = (day: number, changed: number) => {
  const content = exportOf(day, changed);
  return storeConfigRead(
    db,
    {
      routerId,
      content,
      ...digestConfigExport(content),
      at: new Date(Date.UTC(2026, 0, 1) + day * DAY_MS),
      retention: 100,
    },
    countLines,
  );
};
await read(0, 0);
const base = await size();
for (let day = 1; day <= DAYS; day++) await read(day, 0);
const unchanged = await size();
for (let day = 1; day <= DAYS; day++) await read(DAYS + day, 1);
const oneLine = await size();
const [versions] = await db.query<{ n: number }>("select count(*)::int as n from router_config_backups");
console.log(
  JSON.stringify({
    database: db.url ? "postgresql" : "pglite",
    export_bytes: Buffer.byteLength(exportOf(0, 0)),
    export_lines: LINES + 3,
    versions: versions?.n,
    bytes_per_day_unchanged: Math.round((unchanged - base) / DAYS),
    bytes_per_day_one_line_changed: Math.round((oneLine - unchanged) / DAYS),
  }),
);
await db.close();
