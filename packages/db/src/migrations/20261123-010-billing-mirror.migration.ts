import { Migration } from "@mikro-orm/migrations";

/**
 * The local billing mirror (docs/billing.md): the processor's cards, invoices and subscription
 * status, kept from its webhook events and reconciliation, so lists and the subscription check
 * work while the processor is slow or down; and the processed event ids (each event once).
 */
export class BillingMirrorMigration extends Migration {
  override up(): void {
    this.addSql(
      `create table "billing_payment_methods" ("id" varchar(255) not null, "account_id" uuid not null, "type" varchar(32) not null, "brand" varchar(64) not null, "last4" varchar(4) not null, "exp_month" int not null, "exp_year" int not null, "is_default" boolean not null default false, "created_at" timestamptz not null, "synced_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "billing_payment_methods_account_id_index" on "billing_payment_methods" ("account_id");`);
    this.addSql(
      `alter table "billing_payment_methods" add constraint "billing_payment_methods_account_id_foreign" foreign key ("account_id") references "billing_accounts" ("id") on delete cascade;`,
    );
    this.addSql(
      `create table "billing_invoices" ("id" varchar(255) not null, "account_id" uuid not null, "stripe_subscription_id" varchar(255) null, "number" varchar(255) null, "description" text null, "currency" varchar(3) not null, "amount_due" bigint not null, "amount_paid" bigint not null, "amount_remaining" bigint not null, "subtotal" bigint not null, "subtotal_excluding_tax" bigint not null, "total" bigint not null, "tax" bigint not null, "total_excluding_tax" bigint not null, "due_date" timestamptz null, "invoice_pdf" text null, "status" varchar(32) not null, "period_start" timestamptz not null, "period_end" timestamptz not null, "paid" boolean not null, "attempted" boolean not null, "attempt_count" int not null, "created_at" timestamptz not null, "synced_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "billing_invoices_account_id_index" on "billing_invoices" ("account_id");`);
    this.addSql(
      `alter table "billing_invoices" add constraint "billing_invoices_account_id_foreign" foreign key ("account_id") references "billing_accounts" ("id") on delete cascade;`,
    );
    this.addSql(
      `create table "billing_mirror_syncs" ("account_id" uuid not null, "synced_at" timestamptz not null, primary key ("account_id"));`,
    );
    this.addSql(
      `alter table "billing_mirror_syncs" add constraint "billing_mirror_syncs_account_id_foreign" foreign key ("account_id") references "billing_accounts" ("id") on update cascade on delete cascade;`,
    );
    this.addSql(
      `create table "stripe_webhook_events" ("id" varchar(255) not null, "type" varchar(255) not null, "received_at" timestamptz not null, primary key ("id"));`,
    );
    // Existing rows predate the mirror: "active" until the first reconciliation says otherwise.
    this.addSql(`alter table "billing_subscriptions" add column "status" varchar(32) not null default 'active';`);
    this.addSql(`alter table "billing_subscriptions" add column "status_at" timestamptz null;`);
  }
}
