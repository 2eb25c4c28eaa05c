import type { AccountRecord, BillingContext, NewSubscription, SubscriptionRecord } from "@fleet/db";
import { AppError } from "@fleet/shared";
import type { SubscriptionGateway, SubscriptionSnapshot } from "../../integrations/stripe/subscription-gateway.ts";
import type { ServiceClearance } from "../routers/service-clearance.ts";
import { currencyForCountry, managedRouterPrice } from "./managed-router-prices.ts";

export interface SubscriptionServiceDeps {
  accounts: { billingContext(organizationId: string): Promise<BillingContext | null> };
  subscriptions: {
    findByAccount(accountId: string): Promise<SubscriptionRecord | null>;
    insert(input: NewSubscription): Promise<SubscriptionRecord | null>;
    updateQuantity(id: string, quantity: number): Promise<void>;
    countRoutersInTree(rootOrganizationId: string): Promise<number>;
  };
  gateway: SubscriptionGateway;
  docsUrl: string;
}

/**
 * The subscription interface of docs/api.md "Initial state and workflow rules" 4 (ServiceClearance, called
 * by router enrollment and removal). Bills managed routers: one subscription per billing account,
 * quantity = routers in the tree.
 * Every sync recounts from the database, so a sync that failed half-way (processor down) is
 * repaired by the next one instead of drifting.
 */
export class SubscriptionService implements ServiceClearance {
  readonly #deps: SubscriptionServiceDeps;
  // Syncs of one account run one after another: the last one counts last and wins.
  readonly #queues = new Map<string, Promise<void>>();

  constructor(deps: SubscriptionServiceDeps) {
    this.#deps = deps;
  }

  async ensureClearance(organizationId: string): Promise<void> {
    const context = await this.#context(organizationId);
    if (context.account) return;
    const own = context.rootOrganizationId === organizationId;
    const message = own
      ? "Creating a service needs a billing account, and this organization has none. Create one with POST /v1/account (name, email, address.country), then try again."
      : `Creating a service needs a billing account at the top of this organization tree, and "${context.rootOrganizationName}" (${context.rootOrganizationId}) has none. Its owner must create one with POST /v1/account, then try again.`;
    throw new AppError("payment_required", message, {
      extra: { documentation_url: this.#deps.docsUrl, billing_organization_id: context.rootOrganizationId },
    });
  }

  async syncQuantity(organizationId: string): Promise<void> {
    const context = await this.#context(organizationId);
    const account = context.account;
    // Without an account there is nothing to bill; ensureClearance is what refuses such services.
    if (!account) return;
    await this.#serialized(account.id, () => this.#sync(context.rootOrganizationId, account));
  }

  async #sync(rootOrganizationId: string, account: AccountRecord, attempt = 0): Promise<void> {
    const { subscriptions, gateway } = this.#deps;
    const quantity = await subscriptions.countRoutersInTree(rootOrganizationId);
    const current = await subscriptions.findByAccount(account.id);
    if (current) {
      if (current.quantity === quantity) return;
      // Processor first: if it fails, our row still says what the processor bills.
      await gateway.updateQuantity({
        subscriptionId: current.stripeSubscriptionId,
        itemId: current.stripeItemId,
        quantity,
      });
      await subscriptions.updateQuantity(current.id, quantity);
      return;
    }
    if (quantity === 0) return;

    const created = await this.#createOrAdopt(account, quantity);
    const row = await subscriptions.insert({
      accountId: account.id,
      stripeSubscriptionId: created.id,
      stripeItemId: created.itemId,
      currency: created.currency,
      quantity,
    });
    if (row) return;
    // Another process recorded a subscription first: ours is surplus unless it is the same one.
    const winner = await subscriptions.findByAccount(account.id);
    if (winner?.stripeSubscriptionId !== created.id) await gateway.cancelSubscription(created.id);
    if (attempt === 0) await this.#sync(rootOrganizationId, account, 1);
  }

  /** A subscription made earlier whose answer was lost is adopted, never duplicated. */
  async #createOrAdopt(account: AccountRecord, quantity: number): Promise<SubscriptionSnapshot> {
    const { gateway } = this.#deps;
    const existing = await gateway.findSubscription(account.stripeCustomerId, account.id);
    if (existing) {
      if (existing.quantity !== quantity) {
        await gateway.updateQuantity({ subscriptionId: existing.id, itemId: existing.itemId, quantity });
      }
      return { ...existing, quantity };
    }
    // docs/api.md "Account": the first subscription fixes the currency, from the country when priced.
    const price = managedRouterPrice(account.currency || currencyForCountry(account.address.country));
    const priceId = await gateway.ensurePrice(price);
    return gateway.createSubscription({
      customerId: account.stripeCustomerId,
      accountId: account.id,
      priceId,
      quantity,
    });
  }

  async #serialized(key: string, task: () => Promise<void>): Promise<void> {
    const previous = this.#queues.get(key) ?? Promise.resolve();
    const run = previous.catch(() => {}).then(task);
    this.#queues.set(key, run);
    try {
      await run;
    } finally {
      if (this.#queues.get(key) === run) this.#queues.delete(key);
    }
  }

  async #context(organizationId: string): Promise<BillingContext> {
    const context = await this.#deps.accounts.billingContext(organizationId);
    if (!context) throw new AppError("unauthenticated", "The organization named by the access token does not exist.");
    return context;
  }
}
