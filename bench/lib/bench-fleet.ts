import type { Database } from "@fleet/db";

/** The interfaces every bench router reports (heartbeat-bench-load.ts, health-flush-bench.ts). */
export const BENCH_INTERFACES = ["ether1", "ether2", "ether3", "ether4", "ether5", "sfp-sfpplus1", "wg0", "vlan10"];

/**
 * One organization, its default team and `routers` routers with ids `<i as 8 hex digits>-0000-4000-8000-000000000000`
 * and heartbeat tokens `hb_<prefix>_<i>` (hashed as the daemon hashes them), for the flush benches.
 * Every router holds a day-old state of BENCH_INTERFACES, as a fleet that has reported before: a
 * measured sample period rewrites the rows (the steady case), it does not insert them.
 */
export const seedBenchFleet = async (
  db: Database,
  routers: number,
  prefix: string,
): Promise<{ ids: string[]; organizationId: string }> => {
  const orgId = crypto.randomUUID();
  const teamId = crypto.randomUUID();
  await db.query("insert into organizations (id, name, created_at) values ($1, 'bench', now())", [orgId]);
  await db.query(
    "insert into teams (id, organization_id, name, is_default, created_at) values ($1, $2, 'bench', true, now())",
    [teamId, orgId],
  );
  await db.query(
    `insert into routers (id, organization_id, team_id, name, heartbeat_token_hash, created_at)
     select (lpad(to_hex(i), 8, '0') || '-0000-4000-8000-000000000000')::uuid, $1, $2, 'bench ' || i,
       encode(sha256(convert_to('hb_' || $3 || '_' || i, 'UTF8')), 'hex'), now() - interval '1 day'
     from generate_series(0, $4) as i`,
    [orgId, teamId, prefix, routers - 1],
  );
  await db.query(
    `insert into router_interfaces_state (router_id, reported_at, written_from, interfaces)
     select r.id, now() - interval '1 day', now() - interval '1 day',
       (select jsonb_object_agg(n, jsonb_build_array((extract(epoch from now() - interval '1 day') * 1000)::float8,
          true, 1000000, 500000, 0, 0, 8000.5, 4000.5)) from unnest($2::text[]) as n)
     from routers r where r.organization_id = $1`,
    [orgId, BENCH_INTERFACES],
  );
  return {
    organizationId: orgId,
    ids: Array.from({ length: routers }, (_, i) => `${i.toString(16).padStart(8, "0")}-0000-4000-8000-000000000000`),
  };
};
