/**
 * `npm run bench:roles`: what the effective role costs on the request path (docs/api.md "Roles and
 * scopes"), at the deepest tree allowed (10 levels) with the only membership at the top, so every
 * lookup walks the whole chain. Prints the cost of a lookup that reaches the database (cache miss:
 * one recursive query), of a cached answer (what every other request pays), and how many queries
 * a run of cached requests made (it must be none). With DATABASE_URL a scratch database is created on
 * that server and dropped; without it runs on PGlite. Options: --lookups N (default 500),
 * --requests N (default 200000).
 */
import { parseArgs } from "node:util";
import { performance } from "node:perf_hooks";
import type { Database } from "@fleet/db";
import type { KyselyPlugin } from "kysely";
import { createTestDatabase, makeChildOrganization, makeUser } from "@fleet/db/testing";
import { ALL_SCOPES, ManualClock } from "@fleet/shared";
import { MembershipsService, ROLE_CACHE_TTL_MS } from "@fleet/api";

const { values } = parseArgs({
  options: { lookups: { type: "string", default: "500" }, requests: { type: "string", default: "200000" } },
});
const LOOKUPS = Number(values.lookups);
const REQUESTS = Number(values.requests);

const db = await createTestDatabase();
let queries = 0;
// Every statement counts, raw or built with `query.kysely` (a plugin sees each one as it runs).
const counting: KyselyPlugin = {
  transformQuery: ({ node }) => {
    queries++;
    return node;
  },
  transformResult: async ({ result }) => result,
};
const counted: Database = {
  ...db,
  query: Object.assign(
    ((sql: string, params?: readonly unknown[]) => {
      queries++;
      return db.query(sql, params);
    }) as Database["query"],
    { kysely: db.query.kysely.withPlugin(counting) },
  ),
};
const owner = await makeUser(db);
let leaf = owner.organizationId;
for (let level = 2; level <= 10; level++) leaf = (await makeChildOrganization(db, leaf)).organizationId;
const clock = new ManualClock(new Date("2026-11-29T00:00:00Z"));
const roles = new MembershipsService({ db: counted, clock });
const claims = {
  userId: owner.userId,
  organizationId: leaf,
  teamId: undefined,
  scopes: new Set<string>(ALL_SCOPES),
  timezone: undefined,
  exp: Number.MAX_SAFE_INTEGER,
  credential: { type: "token" as const, id: owner.userId },
};

const misses: number[] = [];
for (let i = 0; i < LOOKUPS; i++) {
  clock.advance(ROLE_CACHE_TTL_MS);
  const started = performance.now();
  const role = await roles.effectiveRole(owner.userId, leaf);
  misses.push(performance.now() - started);
  if (role?.role !== "owner") throw new Error("the owner at the top must be owner at level 10");
}
misses.sort((a, b) => a - b);
const pct = (p: number) => (misses[Math.min(misses.length - 1, Math.floor(misses.length * p))] ?? 0).toFixed(3);

await roles.limit(claims);
queries = 0;
const started = performance.now();
for (let i = 0; i < REQUESTS; i++) {
  const limited = roles.limit(claims);
  if (limited instanceof Promise) throw new Error("a cached role must answer without an await");
}
const cachedNs = ((performance.now() - started) * 1e6) / REQUESTS;

console.log(`engine: ${db.url ? "postgresql" : "pglite"}; tree: 10 levels, membership at the top`);
console.log(`cache miss (one recursive query): p50 ${pct(0.5)} ms, p99 ${pct(0.99)} ms over ${LOOKUPS} lookups`);
console.log(`cached answer: ${cachedNs.toFixed(0)} ns per request over ${REQUESTS} requests, ${queries} queries`);
await db.close();
