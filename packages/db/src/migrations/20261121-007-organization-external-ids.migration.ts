import { Migration } from "@mikro-orm/migrations";

/** Identity-provider organization ids that are not our UUIDs (just-in-time provisioning). */
export class OrganizationExternalIdsMigration extends Migration {
  override up(): void {
    this.addSql(
      `create table "organization_external_ids" ("external_id" varchar(255) not null, "organization_id" uuid not null, "created_at" timestamptz not null, primary key ("external_id"));`,
    );
    this.addSql(
      `create index "organization_external_ids_organization_id_index" on "organization_external_ids" ("organization_id");`,
    );
    this.addSql(
      `alter table "organization_external_ids" add constraint "organization_external_ids_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`,
    );
  }
}
