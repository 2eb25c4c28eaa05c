import { Migration } from "@mikro-orm/migrations";

/** Users, organizations (with the billing hierarchy), members, teams and billing accounts. */
export class AccountsMigration extends Migration {
  override up(): void {
    this.addSql(
      `create table "organizations" ("id" uuid not null, "name" varchar(200) not null, "parent_id" uuid null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `create table "billing_accounts" ("id" uuid not null, "organization_id" uuid not null, "name" varchar(100) not null, "email" varchar(250) not null, "currency" varchar(3) not null default '', "balance_minor" bigint not null default '0', "address_city" varchar(50) not null default '', "address_country" varchar(2) not null, "address_line1" varchar(100) not null default '', "address_line2" varchar(100) not null default '', "address_postal_code" varchar(10) not null default '', "address_state" varchar(50) not null default '', "stripe_customer_id" varchar(255) not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `alter table "billing_accounts" add constraint "billing_accounts_organization_id_unique" unique ("organization_id");`,
    );
    this.addSql(
      `alter table "billing_accounts" add constraint "billing_accounts_stripe_customer_id_unique" unique ("stripe_customer_id");`,
    );
    this.addSql(
      `create table "teams" ("id" uuid not null, "organization_id" uuid not null, "name" varchar(200) not null, "is_default" boolean not null default false, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "teams_organization_id_index" on "teams" ("organization_id");`);
    this.addSql(
      `create table "users" ("id" uuid not null, "email" varchar(250) not null, "current_organization_id" uuid null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`alter table "users" add constraint "users_email_unique" unique ("email");`);
    this.addSql(
      `create table "organization_members" ("id" uuid not null, "organization_id" uuid not null, "user_id" uuid not null, "role" text not null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `alter table "organization_members" add constraint "organization_members_organization_id_user_id_unique" unique ("organization_id", "user_id");`,
    );
    this.addSql(
      `alter table "organization_members" add constraint "organization_members_role_check" check ("role" in ('owner', 'admin', 'member'));`,
    );
    this.addSql(
      `alter table "organizations" add constraint "organizations_parent_id_foreign" foreign key ("parent_id") references "organizations" ("id") on delete set null;`,
    );
    this.addSql(
      `alter table "billing_accounts" add constraint "billing_accounts_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "teams" add constraint "teams_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "users" add constraint "users_current_organization_id_foreign" foreign key ("current_organization_id") references "organizations" ("id") on delete set null;`,
    );
    this.addSql(
      `alter table "organization_members" add constraint "organization_members_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "organization_members" add constraint "organization_members_user_id_foreign" foreign key ("user_id") references "users" ("id") on delete cascade;`,
    );
  }
}
