import type { Database } from "../database.ts";
import { BillingAccount } from "../entities/billing-account.entity.ts";
import { BillingSubscription, type TBillingSubscription } from "../entities/billing-subscription.entity.ts";
import { isUniqueViolation, toNumber } from "./sql-values.ts";

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
  select id, 0 from organizations where id = ?
  union all
  select o.id, t.depth + 1 from organizations o join tree t on o.parent_id = t.id
  where t.depth < 32
)
select count(*)::int as n from routers r where r.organization_id in (select id from tree)`;

const fromEntity = (e: TBillingSubscription): SubscriptionRecord => ({
  id: e.id,
  accountId: typeof e.account === "string" ? e.account : e.account.id,
  stripeSubscriptionId: e.stripeSubscriptionId,
  stripeItemId: e.stripeItemId,
  currency: e.currency,
  quantity: e.quantity,
});

/** Billing subscriptions and the router count they bill for. */
export class SubscriptionsRepository {
  readonly #db: Database;
  constructor(db: Database) {
    this.#db = db;
  }

  async findByAccount(accountId: string): Promise<SubscriptionRecord | null> {
    const entity = await this.#db.em().findOne(BillingSubscription, { account: accountId });
    return entity ? fromEntity(entity) : null;
  }

  /**
   * Records the first subscription and, in the same transaction, sets the account's currency when
   * it is still empty (docs/api.md "Account": currency is set at the first subscription). Null when the
   * account already has one (a concurrent creator won).
   */
  async insert(input: NewSubscription): Promise<SubscriptionRecord | null> {
    try {
      return await this.#db.em().transactional(async (em) => {
        const entity = em.create(BillingSubscription, {
          id: crypto.randomUUID(),
          account: input.accountId,
          stripeSubscriptionId: input.stripeSubscriptionId,
          stripeItemId: input.stripeItemId,
          currency: input.currency,
          quantity: input.quantity,
        });
        await em.flush();
        await em.nativeUpdate(
          BillingAccount,
          { id: input.accountId, currency: "" },
          { currency: input.currency.toUpperCase(), updatedAt: new Date() },
        );
        return fromEntity(entity);
      });
    } catch (error) {
      if (isUniqueViolation(error)) return null;
      throw error;
    }
  }

  async updateQuantity(id: string, quantity: number): Promise<void> {
    const em = this.#db.em();
    const entity = await em.findOneOrFail(BillingSubscription, { id });
    entity.quantity = quantity;
    await em.flush();
  }

  /** Routers of every organization in the tree under (and including) the billing root. */
  async countRoutersInTree(rootOrganizationId: string): Promise<number> {
    const rows = await this.#db.query<{ n: unknown }>(ROUTERS_IN_TREE_SQL, [rootOrganizationId]);
    return toNumber(rows[0]?.n ?? 0);
  }
}
