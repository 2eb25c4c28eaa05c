import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, makeUser, type TestDatabase } from "../testing/index.ts";
import { LIVENESS_JOIN, ROUTER_COLUMNS, RoutersRepository } from "./routers.repository.ts";

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.close();
});

describe("RoutersRepository.refreshPlannerStatistics", () => {
  it("on PGlite gives the planner the fleet's size, so a team's first page by name walks the index", async () => {
    const owner = await makeUser(db);
    await db.query(
      `insert into routers (id, organization_id, team_id, name, heartbeat_token_hash, created_at)
       select gen_random_uuid(), $1, $2, 'site-' || md5(i::text), md5(i::text) || md5(i::text), now()
       from generate_series(1, 3000) i`,
      [owner.organizationId, owner.teamId],
    );
    const refreshed = await new RoutersRepository(db).refreshPlannerStatistics();
    // PostgreSQL's autovacuum keeps the statistics: the call leaves them to it.
    expect(refreshed).toBe(db.driver === "pglite");
    if (!refreshed) return;
    const [stats] = await db.query<{ tuples: number }>(
      "select reltuples::int as tuples from pg_class where relname = 'routers'",
    );
    expect(stats?.tuples).toBeGreaterThanOrEqual(3000);
    const plan = (
      await db.query<{ "QUERY PLAN": string }>(
        `explain select ${ROUTER_COLUMNS} from routers r ${LIVENESS_JOIN} where r.team_id = $1
         order by lower(r.name) collate "C", r.id limit 101`,
        [owner.teamId],
      )
    )
      .map((row) => row["QUERY PLAN"])
      .join("\n");
    expect(plan).toMatch(/Index Scan using routers_team_name_id_index/);
    expect(plan).not.toMatch(/Sort/);
  });
});
