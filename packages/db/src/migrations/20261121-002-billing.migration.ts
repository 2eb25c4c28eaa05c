import { Migration } from "@mikro-orm/migrations";

/** The processor subscription of each billing account (managed routers, billed per router). */
export class BillingMigration extends Migration {
  override up(): void {
    this.addSql(
      `create table "billing_subscriptions" ("id" uuid not null, "account_id" uuid not null, "stripe_subscription_id" varchar(255) not null, "stripe_item_id" varchar(255) not null, "currency" varchar(3) not null, "quantity" int not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `alter table "billing_subscriptions" add constraint "billing_subscriptions_account_id_unique" unique ("account_id");`,
    );
    this.addSql(
      `alter table "billing_subscriptions" add constraint "billing_subscriptions_stripe_subscription_id_unique" unique ("stripe_subscription_id");`,
    );
    this.addSql(
      `alter table "billing_subscriptions" add constraint "billing_subscriptions_account_id_foreign" foreign key ("account_id") references "billing_accounts" ("id") on delete cascade;`,
    );
  }
}
