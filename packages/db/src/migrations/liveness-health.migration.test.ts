import { describe, expect, it } from "vitest";
import { createTestDatabase, makeUser } from "../testing/index.ts";

/** Migration 170 on data written before it: the latest health values move into router_liveness. */
describe("migration 170: the latest health values in the liveness row", () => {
  it("copies each router's values (with or without a liveness row), keeps liveness as it was, and drops the table", async () => {
    const db = await createTestDatabase({ migrateTo: "20261201-161-interfaces-state" });
    try {
      const user = await makeUser(db);
      const [beating, silent, never] = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
      for (const id of [beating, silent, never])
        await db.query(
          `insert into routers (id, organization_id, team_id, name, heartbeat_token_hash, created_at)
           values ($1::uuid, $2, $3, 'r', md5($4) || md5($4), now())`,
          [id, user.organizationId, user.teamId, id],
        );
      await db.query(
        "insert into router_liveness (router_id, has_pulse, last_seen_at, facts_digest) values ($1, true, 'epoch', 7)",
        [beating],
      );
      await db.query(
        `insert into router_health_latest (router_id, reported_at, cpu_load, temperature, ping_rtt_ms)
         values ($1, '2026-11-30T12:00:00Z', 12.5, 40, null), ($2, '2026-11-29T12:00:00Z', null, null, 1.5)`,
        [beating, silent],
      );

      await db.migrate();

      const rows = await db.query<Record<string, unknown>>(
        `select router_id, has_pulse, last_seen_at is not null as seen, facts_digest::text as digest,
           (extract(epoch from health_reported_at) * 1000)::float8 as reported_ms, cpu_load::float8 as cpu,
           temperature::float8 as temperature, ping_rtt_ms::float8 as rtt
         from router_liveness order by health_reported_at desc`,
      );
      expect(rows).toEqual([
        {
          router_id: beating,
          has_pulse: true,
          seen: true,
          digest: "7",
          reported_ms: Date.UTC(2026, 10, 30, 12),
          cpu: 12.5,
          temperature: 40,
          rtt: null,
        },
        {
          router_id: silent,
          has_pulse: false,
          seen: false,
          digest: null,
          reported_ms: Date.UTC(2026, 10, 29, 12),
          cpu: null,
          temperature: null,
          rtt: 1.5,
        },
      ]);
      expect(await db.query("select to_regclass('router_health_latest') as t")).toEqual([{ t: null }]);
    } finally {
      await db.close();
    }
  });
});
