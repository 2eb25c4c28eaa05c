import { Migration } from "@mikro-orm/migrations";

/** Leases of cluster-wide duties (metrics exported once per cluster: docs/operations.md "Metrics"). */
export class ObservabilityMigration extends Migration {
  override up(): void {
    this.addSql(
      `create table "cluster_leases" ("name" varchar(100) not null, "holder" varchar(200) not null, "expires_at" timestamptz not null, primary key ("name"));`,
    );
  }
}
