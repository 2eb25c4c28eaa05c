import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, makeUser, type TestDatabase } from "../testing/index.ts";
import { LIST_ITEM, LIST_JOIN, RoutersRepository } from "./routers.repository.ts";

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
        `explain select ${LIST_ITEM} from routers r ${LIST_JOIN} where r.team_id = $1
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

describe("RoutersRepository.listByTeam", () => {
  it("finds q through the trigram index (routers_search_trgm_index), not a scan of the team", async () => {
    const owner = await makeUser(db);
    await db.query(
      `insert into routers (id, organization_id, team_id, name, identity, heartbeat_token_hash, created_at)
       select gen_random_uuid(), $1, $2, 'site-' || md5(i::text), 'gw-' || i, md5('q' || i) || md5(i::text), now()
       from generate_series(1, 3000) i`,
      [owner.organizationId, owner.teamId],
    );
    if (!(await new RoutersRepository(db).refreshPlannerStatistics())) await db.query("analyze routers");
    const plans: string[] = [];
    // The repository's own statement, explained instead of run.
    const explaining = new Proxy(db, {
      get: (target, key) =>
        key === "query"
          ? async (sql: string, params: unknown[]) => {
              const rows = await target.query<{ "QUERY PLAN": string }>(`explain ${sql}`, params);
              plans.push(rows.map((row) => row["QUERY PLAN"]).join("\n"));
              return [];
            }
          : Reflect.get(target, key),
    });
    for (const sort of ["name", "last_seen"] as const)
      await new RoutersRepository(explaining).listByTeam({ teamId: owner.teamId, q: "gw-12", sort, limit: 101 });
    for (const plan of plans) expect(plan).toMatch(/routers_search_trgm_index/);
    // gw-12, gw-120..gw-129, gw-1200..gw-1299; a match never spans two fields ("site-…" follows the identity).
    const found = await new RoutersRepository(db).listByTeam({ teamId: owner.teamId, q: "gw-12", sort: "name" });
    expect(found).toHaveLength(111);
    expect(await new RoutersRepository(db).listByTeam({ teamId: owner.teamId, q: "0site", sort: "name" })).toEqual([]);
  });
});
