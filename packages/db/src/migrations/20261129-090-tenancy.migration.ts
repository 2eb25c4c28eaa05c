import { Migration } from "@mikro-orm/migrations";

/**
 * Tenancy (docs/api.md "Organizations, members and invitations"):
 * - the five roles of a membership (the old `member` was never granted; it becomes `viewer`), and
 *   an optional team a membership is bound to;
 * - memberships found by user (the effective role walks a user's memberships up the tree);
 * - invitations: only the SHA-256 of the token is stored, single use, with an expiry.
 */
export class TenancyMigration extends Migration {
  override up(): void {
    this.addSql(`update "organization_members" set "role" = 'viewer' where "role" = 'member';`);
    this.addSql(`alter table "organization_members" drop constraint "organization_members_role_check";`);
    this.addSql(
      `alter table "organization_members" add constraint "organization_members_role_check" check ("role" in ('owner', 'admin', 'billing', 'technician', 'viewer'));`,
    );
    this.addSql(`alter table "organization_members" add column "team_id" uuid null;`);
    this.addSql(`create index "organization_members_team_id_index" on "organization_members" ("team_id");`);
    this.addSql(`create index "organization_members_user_id_index" on "organization_members" ("user_id");`);
    this.addSql(
      `alter table "organization_members" add constraint "organization_members_team_id_foreign" foreign key ("team_id") references "teams" ("id") on delete cascade;`,
    );
    this.addSql(`create index "organizations_parent_id_index" on "organizations" ("parent_id");`);
    this.addSql(
      `create table "invitations" ("id" uuid not null, "organization_id" uuid not null, "email" varchar(250) not null, "role" text not null, "team_id" uuid null, "token_hash" varchar(64) not null, "invited_by" varchar(255) not null, "created_at" timestamptz not null, "expires_at" timestamptz not null, "accepted_at" timestamptz null, "accepted_by" uuid null, "revoked_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`create index "invitations_organization_id_index" on "invitations" ("organization_id");`);
    this.addSql(`create index "invitations_team_id_index" on "invitations" ("team_id");`);
    this.addSql(`alter table "invitations" add constraint "invitations_token_hash_unique" unique ("token_hash");`);
    this.addSql(
      `alter table "invitations" add constraint "invitations_role_check" check ("role" in ('owner', 'admin', 'billing', 'technician', 'viewer'));`,
    );
    this.addSql(
      `alter table "invitations" add constraint "invitations_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "invitations" add constraint "invitations_team_id_foreign" foreign key ("team_id") references "teams" ("id") on delete cascade;`,
    );
  }
}
