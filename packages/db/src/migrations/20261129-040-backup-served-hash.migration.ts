import { Migration } from "@mikro-orm/migrations";

/**
 * docs/api.md "Configuration backups": a version's `sha256` is the hash of the text it serves. It
 * was the hash of the normalized text (dated first line dropped), which now has a column of its
 * own for recognising an unchanged read; existing rows keep it there and get the served text's hash.
 */
export class BackupServedHashMigration extends Migration {
  override up(): void {
    this.addSql(`alter table "router_config_backups" add column "normalized_sha256" varchar(64) null;`);
    this.addSql(
      `update "router_config_backups" set "normalized_sha256" = "sha256", "sha256" = encode(sha256(convert_to("content", 'UTF8')), 'hex');`,
    );
  }
}
