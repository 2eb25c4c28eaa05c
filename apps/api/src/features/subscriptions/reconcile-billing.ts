import type { BillingMirror } from "./billing-mirror.ts";
import type { MirrorAccount } from "@fleet/db";
import { type Clock, INVOICE_LIST_LIMIT } from "@fleet/shared";
import type { PaymentsGateway } from "../../integrations/stripe/payments-gateway.ts";
import type { SubscriptionGateway } from "../../integrations/stripe/subscription-gateway.ts";

export interface ReconcileBillingDeps {
  mirror: Pick<BillingMirror, "accounts" | "accountTransaction">;
  payments: Pick<PaymentsGateway, "listCards" | "defaultPaymentMethodId" | "listInvoices">;
  subscriptions: Pick<SubscriptionGateway, "currentSubscription">;
  clock: Clock;
}

export interface ReconcileResult {
  accounts: number;
  /** Accounts the processor could not be asked about (left as they were). */
  failed: number;
}

/**
 * Rebuilds the billing mirror of the given accounts (default: every account) from the processor:
 * cards and the default card exactly, the most recent invoices, the subscription's status. This is
 * what repairs a missed webhook event (docs/billing.md "Reconciliation"). Periodic runs go through
 * `BillingMirror.withClusterLock` so one process in a cluster does it at a time; on
 * demand it runs for one account when its mirror was never built. A failing account is skipped,
 * not fatal: the next pass tries again.
 */
export const reconcileBilling = async (
  deps: ReconcileBillingDeps,
  accounts?: MirrorAccount[],
  onError: (error: unknown, account: MirrorAccount) => void = () => {},
): Promise<ReconcileResult> => {
  const targets = accounts ?? (await deps.mirror.accounts());
  let failed = 0;
  for (const account of targets) {
    try {
      await reconcileAccount(deps, account);
    } catch (error) {
      failed++;
      onError(error, account);
    }
  }
  return { accounts: targets.length, failed };
};

const reconcileAccount = async (deps: ReconcileBillingDeps, account: MirrorAccount): Promise<void> => {
  const customerId = account.stripeCustomerId;
  // Everything is read before anything is written, so an outage half-way changes nothing.
  const [cards, defaultId, invoices, subscription] = await Promise.all([
    deps.payments.listCards(customerId),
    deps.payments.defaultPaymentMethodId(customerId),
    deps.payments.listInvoices(customerId, INVOICE_LIST_LIMIT),
    deps.subscriptions.currentSubscription(customerId, account.id),
  ]);
  const at = new Date(Math.floor(deps.clock.now().getTime() / 1000) * 1000);
  await deps.mirror.accountTransaction(account.id, async (writer) => {
    await writer.replaceCards(
      account.id,
      cards.filter((c) => c.type === "card"),
      defaultId,
      at,
    );
    for (const invoice of invoices) await writer.upsertInvoice(account.id, invoice, at);
    if (subscription) await writer.upsertSubscription(account.id, { ...subscription, at });
    await writer.markSynced(account.id, at);
  });
};
