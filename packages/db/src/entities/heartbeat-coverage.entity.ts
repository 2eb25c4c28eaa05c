import { defineEntity, type InferEntity, p } from "@mikro-orm/core";

/**
 * One row (id 1): since when some heartbeat daemon has been continuously up, and when the last
 * outage of every daemon began. The sweeper uses it so a daemon restart opens no false faults
 * (docs/api.md "Routers and heartbeats"): routers whose sockets dropped because the daemons went away get their
 * full threshold again from `coveredSince`.
 */
export const HeartbeatCoverage = defineEntity({
  name: "HeartbeatCoverage",
  tableName: "heartbeat_coverage",
  properties: {
    id: p.smallint().primary().autoincrement(false),
    coveredSince: p.datetime(),
    /** Last moment a daemon was known alive; an older value than the gap limit means an outage. */
    aliveAt: p.datetime(),
    /** When the last outage began (the last `aliveAt` before it); null before any outage. */
    outageStartedAt: p.datetime().nullable(),
    /** HEARTBEAT_INTERVAL_MS of the daemons, so readers (the API's metrics) apply the same rules. */
    intervalMs: p.integer(),
  },
});
export type THeartbeatCoverage = InferEntity<typeof HeartbeatCoverage>;
