import { Migration } from "@mikro-orm/migrations";

/**
 * One row per running heartbeat daemon: until when its acknowledged heartbeats are all written. The
 * sweeper judges no router past the oldest such moment of a daemon that stopped writing (a database
 * outage), so buffered heartbeats land before anyone is faulted (docs/architecture.md).
 */
export class HeartbeatDaemonsMigration extends Migration {
  override up(): void {
    this.addSql(
      `create table "heartbeat_daemons" ("id" uuid not null, "written_through" timestamptz not null, "stale_since" timestamptz null, primary key ("id"));`,
    );
  }
}
