import { defineEntity, type InferEntity, p } from "@mikro-orm/core";

/**
 * A running heartbeat daemon process (docs/architecture.md "How a heartbeat travels", step 5): every
 * heartbeat it acknowledged before `writtenThrough` is in the database. A daemon whose writes fail
 * (a database outage) stops moving it; the sweeper then judges no router past it, so a router whose
 * heartbeats wait in that daemon's buffer is never faulted for the database's silence.
 */
export const HeartbeatDaemon = defineEntity({
  name: "HeartbeatDaemon",
  tableName: "heartbeat_daemons",
  properties: {
    id: p.uuid().primary(),
    writtenThrough: p.datetime(),
    /** When a sweeper first found `writtenThrough` stale; the row is dropped (a killed daemon) after a while. */
    staleSince: p.datetime().nullable(),
  },
});
export type THeartbeatDaemon = InferEntity<typeof HeartbeatDaemon>;
