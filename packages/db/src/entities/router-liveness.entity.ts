import { defineEntity, type InferEntity, p } from "@mikro-orm/core";
import { Router } from "./router.entity.ts";

/**
 * What every heartbeat changes, kept apart from `routers` (docs/architecture.md "Liveness: what a heartbeat writes"): one
 * narrow row per router that has ever beaten, written by the daemon's batched flush. No index
 * covers a column a heartbeat changes and the table leaves a quarter of each page free
 * (fillfactor 75, set by the migration), so a heartbeat is a heap-only (HOT) update: no new index
 * entries, no bloat of `routers` and its indexes. No row: never seen (no pulse).
 */
export const RouterLiveness = defineEntity({
  name: "RouterLiveness",
  tableName: "router_liveness",
  properties: {
    router: () => p.manyToOne(Router).primary().deleteRule("cascade"),
    hasPulse: p.boolean().default(false),
    lastSeenAt: p.datetime().nullable(),
    lastSeenFrom: p.string().length(45).nullable(),
    uptimeSeconds: p.bigint("number").nullable(),
    /** The pulse and last seen this row had before its latest heartbeat: the flush reads them back. */
    previousHasPulse: p.boolean().nullable(),
    previousSeenAt: p.datetime().nullable(),
    /**
     * The router's `heartbeat_token_hash`, kept in step by a trigger on `routers` (migration 034):
     * the steady flush checks a heartbeat's token here without reading `routers`.
     */
    heartbeatTokenHash: p.string().length(64).nullable(),
    /** The daemon's digest of the reported facts the last full write applied to `routers` (null: none yet). */
    factsDigest: p.bigint("string").nullable(),
    /**
     * Room for the next heartbeats' row versions: inserted as 240 bytes, set to null by the row's
     * first steady update, so pages hold fewer rows than the fillfactor allows and are pruned less
     * often (migration 035, docs/scale.md "Room on the page").
     */
    room: p.text().nullable(),
    /**
     * The latest health values (docs/api.md "Health"), written by the same heartbeat update
     * (migration 170). Percentages are of the totals the router reported; null: not reported.
     */
    healthReportedAt: p.datetime().nullable(),
    cpuLoad: p.float().nullable(),
    memoryUsedPercent: p.float().nullable(),
    diskUsedPercent: p.float().nullable(),
    temperature: p.float().nullable(),
    voltage: p.float().nullable(),
    pingLossPercent: p.float().nullable(),
    pingRttMs: p.float().nullable(),
  },
});
export type TRouterLiveness = InferEntity<typeof RouterLiveness>;
