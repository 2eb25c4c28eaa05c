import { Migration } from "@mikro-orm/migrations";

/**
 * The hand-written job queue gives way to pg-boss (its own `pgboss` schema, migrated by pg-boss at
 * start). Jobs still queued here are not carried over: the tunnel agent reconciles every router
 * with an active or recently closed forward when it starts, which re-applies missing rules and
 * removes stale ones, i.e. does what those jobs would have done.
 */
export class DropJobsMigration extends Migration {
  override up(): void {
    this.addSql(`drop table if exists "jobs";`);
  }
}
