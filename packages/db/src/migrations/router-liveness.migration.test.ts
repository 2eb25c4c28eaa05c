import { describe, expect, it } from "vitest";
import { createTestDatabase, makeUser } from "../testing/index.ts";

/** Migration 032 on data written before it: each router's liveness moves to `router_liveness` unchanged. */
describe("migration 032: router liveness", () => {
  it("copies pulse, last seen, peer and uptime of routers that have any, and drops them from routers", async () => {
    const db = await createTestDatabase({ migrateTo: "20261125-020-availability" });
    try {
      const user = await makeUser(db);
      const seen = crypto.randomUUID();
      const never = crypto.randomUUID();
      const insert = (id: string, live: boolean) =>
        db.query(
          `insert into routers (id, organization_id, team_id, name, heartbeat_token_hash, created_at,
             has_pulse, last_seen_at, last_seen_from, uptime_seconds)
           values ($1, $2, $3, 'r', $4, now(), $5, $6, $7, $8)`,
          [
            id,
            user.organizationId,
            user.teamId,
            crypto.randomUUID().replaceAll("-", ""),
            live,
            live ? "2026-11-20T10:00:00Z" : null,
            live ? "203.0.113.7" : null,
            live ? 86_400 : null,
          ],
        );
      await insert(seen, true);
      await insert(never, false);

      await db.migrate();

      const rows = await db.query<Record<string, unknown>>(
        `select router_id, has_pulse, extract(epoch from last_seen_at)::int as seen_s, last_seen_from, uptime_seconds::int as uptime
         from router_liveness`,
      );
      expect(rows).toEqual([
        {
          router_id: seen,
          has_pulse: true,
          seen_s: Date.parse("2026-11-20T10:00:00Z") / 1000,
          last_seen_from: "203.0.113.7",
          uptime: 86_400,
        },
      ]);
      const columns = await db.query<{ column_name: string }>(
        `select column_name from information_schema.columns
         where table_name = 'routers' and column_name in ('has_pulse', 'last_seen_at', 'last_seen_from', 'uptime_seconds')`,
      );
      expect(columns).toEqual([]);
      // A removed router takes its liveness with it.
      await db.query("delete from routers where id = $1", [seen]);
      expect(await db.query("select 1 from router_liveness")).toEqual([]);
    } finally {
      await db.close();
    }
  });
});
