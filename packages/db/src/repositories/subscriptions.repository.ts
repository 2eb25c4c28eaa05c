import type { Query } from "../database.ts";
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

// Walks down from the billing root: every organization below it is billed by it (docs/api.md 1).
const ROUTERS_IN_TREE_SQL = `
with recursive tree (id, depth) as (
  select id, 0 from organizations where id = $1
  union all
  select o.id, t.depth + 1 from organizations o join tree t on o.parent_id = t.id
  where t.depth < 32
)
select count(*)::int as n from routers r where r.organization_id in (select id from tree)`;

const SUBSCRIPTION_COLUMNS = "id, account_id, stripe_subscription_id, stripe_item_id, currency, quantity";

type SubscriptionRow = {
  id: string;
  account_id: string;
  stripe_subscription_id: string;
  stripe_item_id: string;
  currency: string;
  quantity: unknown;
};

const fromRow = (row: SubscriptionRow): SubscriptionRecord => ({
  id: row.id,
  accountId: row.account_id,
  stripeSubscriptionId: row.stripe_subscription_id,
  stripeItemId: row.stripe_item_id,
  currency: row.currency,
  quantity: toNumber(row.quantity),
});

/** Billing subscriptions and the router count they bill for. */
export class SubscriptionsRepository {
  readonly #query: Query;
  /** On `queryOf(db)`, or on a transaction's `query` for `insert` (its caller opens it). */
  constructor(query: Query) {
    this.#query = query;
  }

  async findByAccount(accountId: string): Promise<SubscriptionRecord | null> {
    const rows = await this.#query<SubscriptionRow>(
      `select ${SUBSCRIPTION_COLUMNS} from billing_subscriptions where account_id = $1`,
      [accountId],
    );
    return rows[0] ? fromRow(rows[0]) : null;
  }

  /**
   * Records the first subscription and sets the account's currency when it is still empty
   * (docs/api.md "Account": currency is set at the first subscription); run it in a transaction. A
   * second subscription of the account is a unique violation (a concurrent creator won).
   */
  async insert(input: NewSubscription): Promise<SubscriptionRecord> {
    const rows = await this.#query<SubscriptionRow>(
      `insert into billing_subscriptions (id, account_id, stripe_subscription_id, stripe_item_id, currency, quantity,
         created_at, updated_at)
       values ($1, $2, $3, $4, $5, $6, now(), now())
       returning ${SUBSCRIPTION_COLUMNS}`,
      [
        crypto.randomUUID(),
        input.accountId,
        input.stripeSubscriptionId,
        input.stripeItemId,
        input.currency,
        input.quantity,
      ],
    );
    await this.#query(`update billing_accounts set currency = $2, updated_at = now() where id = $1 and currency = ''`, [
      input.accountId,
      input.currency.toUpperCase(),
    ]);
    return fromRow(rows[0] as SubscriptionRow);
  }

  async updateQuantity(id: string, quantity: number): Promise<void> {
    const rows = await this.#query(
      "update billing_subscriptions set quantity = $2, updated_at = now() where id = $1 returning id",
      [id, quantity],
    );
    if (rows.length === 0) throw new Error(`billing subscription ${id} not found`);
  }

  /** Routers of every organization in the tree under (and including) the billing root. */
  async countRoutersInTree(rootOrganizationId: string): Promise<number> {
    const rows = await this.#query<{ n: unknown }>(ROUTERS_IN_TREE_SQL, [rootOrganizationId]);
    return toNumber(rows[0]?.n ?? 0);
  }
}
