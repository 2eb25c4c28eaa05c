import { sql } from "kysely";
import type { Query, Row } from "../database.ts";
import { toNumber } from "./sql-values.ts";

export interface SubscriptionRecord {
  id: string;
  accountId: string;
  stripeSubscriptionId: string;
  stripeItemId: string;
  currency: string;
  quantity: number;
}

export interface NewSubscription {
  accountId: string;
  stripeSubscriptionId: string;
  stripeItemId: string;
  /** Lower-case ISO code as the processor uses it; also becomes the account's currency if unset. */
  currency: string;
  quantity: number;
}

const SUBSCRIPTION_COLUMNS = [
  "id",
  "account_id",
  "stripe_subscription_id",
  "stripe_item_id",
  "currency",
  "quantity",
] as const;

const fromRow = (
  row: Pick<Row<"billing_subscriptions">, (typeof SUBSCRIPTION_COLUMNS)[number]>,
): SubscriptionRecord => ({
  id: row.id,
  accountId: row.account_id,
  stripeSubscriptionId: row.stripe_subscription_id,
  stripeItemId: row.stripe_item_id,
  currency: row.currency,
  quantity: row.quantity,
});

/** Billing subscriptions and the router count they bill for. */
export class SubscriptionsRepository {
  readonly #query: Query;
  /** On `queryOf(db)`, or on a transaction's `query` for `insert` (its caller opens it). */
  constructor(query: Query) {
    this.#query = query;
  }

  async findByAccount(accountId: string): Promise<SubscriptionRecord | null> {
    const row = await this.#query.kysely
      .selectFrom("billing_subscriptions")
      .select(SUBSCRIPTION_COLUMNS)
      .where("account_id", "=", accountId)
      .executeTakeFirst();
    return row ? fromRow(row) : null;
  }

  /**
   * Records the first subscription and sets the account's currency when it is still empty
   * (docs/api.md "Account": currency is set at the first subscription); run it in a transaction. A
   * second subscription of the account is a unique violation (a concurrent creator won).
   */
  async insert(input: NewSubscription): Promise<SubscriptionRecord> {
    const row = await this.#query.kysely
      .insertInto("billing_subscriptions")
      .values({
        id: crypto.randomUUID(),
        account_id: input.accountId,
        stripe_subscription_id: input.stripeSubscriptionId,
        stripe_item_id: input.stripeItemId,
        currency: input.currency,
        quantity: input.quantity,
        created_at: sql<Date>`now()`,
        updated_at: sql<Date>`now()`,
      })
      .returning(SUBSCRIPTION_COLUMNS)
      .executeTakeFirstOrThrow();
    await this.#query.kysely
      .updateTable("billing_accounts")
      .set({ currency: input.currency.toUpperCase(), updated_at: sql<Date>`now()` })
      .where("id", "=", input.accountId)
      .where("currency", "=", "")
      .execute();
    return fromRow(row);
  }

  async updateQuantity(id: string, quantity: number): Promise<void> {
    const updated = await this.#query.kysely
      .updateTable("billing_subscriptions")
      .set({ quantity, updated_at: sql<Date>`now()` })
      .where("id", "=", id)
      .executeTakeFirst();
    if (updated.numUpdatedRows === 0n) throw new Error(`billing subscription ${id} not found`);
  }

  /** Routers of every organization in the tree under (and including) the billing root. */
  async countRoutersInTree(rootOrganizationId: string): Promise<number> {
    // Walks down from the billing root: every organization below it is billed by it (docs/api.md 1).
    // Raw, like every walk of the tree: recursive statements read plainer in SQL than in a builder.
    const { rows } = await sql<{ n: number }>`
      with recursive tree (id, depth) as (
        select id, 0 from organizations where id = ${rootOrganizationId}
        union all
        select o.id, t.depth + 1 from organizations o join tree t on o.parent_id = t.id
        where t.depth < 32
      )
      select count(*)::int as n from routers r where r.organization_id in (select id from tree)`.execute(
      this.#query.kysely,
    );
    return toNumber(rows[0]?.n ?? 0);
  }
}
