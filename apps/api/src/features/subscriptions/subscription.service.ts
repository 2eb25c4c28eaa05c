import {
  type AccountRecord,
  type BillingContext,
  type Database,
  isUniqueViolation,
  type MirrorInvoice,
  type SubscriptionRecord,
  SubscriptionsRepository,
} from "@fleet/db";
import { AppError, currencySymbol, fromMinorUnits, isAppError } from "@fleet/shared";
import type { InvoiceSnapshot, PaymentsGateway } from "../../integrations/stripe/payments-gateway.ts";
import type { SubscriptionGateway, SubscriptionSnapshot } from "../../integrations/stripe/subscription-gateway.ts";
import type { ServiceClearance } from "../routers/service-clearance.ts";
import { currencyForCountry, managedRouterPrice } from "./managed-router-prices.ts";

export interface SubscriptionServiceDeps {
  /** Opens the transaction that records a first subscription with the account's currency. */
  db: Pick<Database, "transaction">;
  accounts: { billingContext(organizationId: string): Promise<BillingContext | null> };
  subscriptions: {
    findByAccount(accountId: string): Promise<SubscriptionRecord | null>;
    updateQuantity(id: string, quantity: number): Promise<void>;
    countRoutersInTree(rootOrganizationId: string): Promise<number>;
  };
  gateway: SubscriptionGateway;
  docsUrl: string;
  /** The billing mirror: what the subscription check reads (docs/billing.md "Failed payments"). */
  mirror: {
    hasCard(accountId: string): Promise<boolean>;
    subscriptionStatus(accountId: string): Promise<{ id: string; status: string } | null>;
    openInvoice(accountId: string): Promise<MirrorInvoice | null>;
  };
  /** Write-through of what the processor answered. */
  mirrorWrites: {
    subscriptionSeen(accountId: string, subscription: SubscriptionSnapshot): Promise<void>;
    invoicesSeen(accountId: string, invoices: InvoiceSnapshot[]): Promise<void>;
    forgetEndedSubscription(stripeSubscriptionId: string): Promise<void>;
  };
  payments: Pick<PaymentsGateway, "retryOpenInvoices">;
  /** `TRIAL_ROUTERS`: routers a billing root may run before it has a payment method on file. */
  trialRouters: number;
}

/** Subscriptions in these states bill nothing any more. */
const ENDED = new Set(["canceled", "incomplete_expired"]);

/** Subscription states in which a payment failed: no new service until it is paid. */
const BLOCKING = new Set(["past_due", "unpaid", "incomplete"]);

const describeInvoice = (invoice: Pick<MirrorInvoice, "id" | "number" | "amountDue" | "currency">): string => {
  const currency = invoice.currency.toUpperCase();
  const amount = `${currencySymbol(currency)}${fromMinorUnits(invoice.amountDue, currency)}`;
  return `invoice ${invoice.number ?? invoice.id} (${invoice.id}, ${amount})`;
};

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
    if (context.account) return this.#ensurePaying(context, context.account);
    const own = context.rootOrganizationId === organizationId;
    const message = own
      ? "Creating a service needs a billing account, and this organization has none. Create one with POST /v1/account (name, email, address.country), then try again."
      : `Creating a service needs a billing account at the top of this organization tree, and "${context.rootOrganizationName}" (${context.rootOrganizationId}) has none. Its owner must create one with POST /v1/account, then try again.`;
    throw new AppError("payment_required", message, {
      extra: { documentation_url: this.#deps.docsUrl, billing_organization_id: context.rootOrganizationId },
    });
  }

  /** docs/billing.md "Failed payments": a failed payment blocks new services; so does a trial used up without a card. */
  async #ensurePaying(context: BillingContext, account: AccountRecord): Promise<void> {
    const { mirror, subscriptions, trialRouters, docsUrl } = this.#deps;
    const whose =
      context.rootOrganizationId === context.organizationId
        ? "this organization's"
        : `the billing account of "${context.rootOrganizationName}" (${context.rootOrganizationId}), which pays for this organization,`;
    const subscription = await mirror.subscriptionStatus(account.id);
    if (subscription && BLOCKING.has(subscription.status)) {
      const open = await mirror.openInvoice(account.id);
      throw new AppError(
        "payment_required",
        `A payment of ${whose} subscription failed (status "${subscription.status}")${open ? `: ${describeInvoice(open)} is unpaid` : ""}. No new service can be created until it is paid: save a working card with POST /v1/account/payment-methods, which charges the open invoice again.`,
        {
          extra: {
            documentation_url: docsUrl,
            billing_organization_id: context.rootOrganizationId,
            subscription_status: subscription.status,
            ...(open ? { invoice_id: open.id, invoice_number: open.number } : {}),
          },
        },
      );
    }
    if (await mirror.hasCard(account.id)) return;
    const routers = await subscriptions.countRoutersInTree(context.rootOrganizationId);
    if (routers < trialRouters) return;
    throw new AppError(
      "payment_required",
      `Without a payment method on file a billing account may run ${trialRouters} router${trialRouters === 1 ? "" : "s"}, and ${whose} account has ${routers}. Save a card with POST /v1/account/payment-methods, then try again.`,
      {
        extra: {
          documentation_url: docsUrl,
          billing_organization_id: context.rootOrganizationId,
          trial_routers: trialRouters,
        },
      },
    );
  }

  /**
   * After a card was saved as the default: open invoices are charged again (the block of a failed
   * payment lifts once they are paid), and trial routers start being billed. A first charge that
   * fails here is not an error of the save: the next enrollment reports it.
   */
  async cardSaved(organizationId: string): Promise<void> {
    const context = await this.#context(organizationId);
    const account = context.account;
    if (!account) return;
    const { payments, gateway, mirrorWrites } = this.#deps;
    const retried = await payments.retryOpenInvoices(account.stripeCustomerId);
    await mirrorWrites.invoicesSeen(account.id, retried);
    const subscriptionIds = new Set(retried.map((i) => i.subscriptionId).filter((id): id is string => id !== null));
    for (const id of subscriptionIds) await mirrorWrites.subscriptionSeen(account.id, await gateway.retrieve(id));
    try {
      await this.syncQuantity(organizationId);
    } catch (error) {
      if (!isAppError(error) || error.code !== "payment_required") throw error;
    }
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
    let current = await subscriptions.findByAccount(account.id);
    // A subscription that ended at the processor (cancelled in its dashboard, or after dunning) is
    // forgotten: the next service starts a new one, under the same rules as the first.
    let previous: string | null = null;
    const state = current ? await this.#deps.mirror.subscriptionStatus(account.id) : null;
    if (current && state && ENDED.has(state.status)) {
      previous = current.stripeSubscriptionId;
      await this.#deps.mirrorWrites.forgetEndedSubscription(current.stripeSubscriptionId);
      current = null;
    }
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
    // Trial routers (no card yet) are not billed: the subscription starts with the first card.
    if (!(await this.#deps.mirror.hasCard(account.id))) return;

    const created = await this.#createOrAdopt(account, quantity, previous);
    // Null when the account already has one: a concurrent creator won (the unique account key).
    const row = await this.#deps.db
      .transaction((query) =>
        new SubscriptionsRepository(query).insert({
          accountId: account.id,
          stripeSubscriptionId: created.id,
          stripeItemId: created.itemId,
          currency: created.currency,
          quantity,
        }),
      )
      .catch((error: unknown) => {
        if (isUniqueViolation(error)) return null;
        throw error;
      });
    if (row) {
      await this.#deps.mirrorWrites.subscriptionSeen(account.id, created);
      // docs/billing.md "Failed payments": a first charge that fails creates no service.
      if (created.status === "incomplete") {
        const invoice = created.latestInvoice;
        throw new AppError(
          "payment_required",
          `The first charge of the subscription failed${invoice ? `: ${describeInvoice(invoice)} is unpaid` : ""}. Save a working card with POST /v1/account/payment-methods, then try again.`,
          {
            extra: {
              documentation_url: this.#deps.docsUrl,
              billing_organization_id: rootOrganizationId,
              subscription_status: created.status,
              ...(invoice ? { invoice_id: invoice.id, invoice_number: invoice.number } : {}),
            },
          },
        );
      }
      return;
    }
    // Another process recorded a subscription first: ours is surplus unless it is the same one.
    const winner = await subscriptions.findByAccount(account.id);
    if (winner?.stripeSubscriptionId !== created.id) await gateway.cancelSubscription(created.id);
    if (attempt === 0) await this.#sync(rootOrganizationId, account, 1);
  }

  /** A subscription made earlier whose answer was lost is adopted, never duplicated. */
  async #createOrAdopt(
    account: AccountRecord,
    quantity: number,
    previous: string | null,
  ): Promise<SubscriptionSnapshot> {
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
      previous,
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
