import type { BillingMirrorRepository, MirrorAccount, MirrorCard, MirrorInvoice } from "@fleet/db";
import type { InvoiceSnapshot } from "../../integrations/stripe/payments-gateway.ts";
import type { SubscriptionSnapshot } from "../../integrations/stripe/subscription-gateway.ts";
import { type ReconcileBillingDeps, type ReconcileResult, reconcileBilling } from "./reconcile-billing.ts";

export interface BillingMirrorServiceDeps {
  repository: BillingMirrorRepository;
  reconcile: ReconcileBillingDeps;
  now: () => Date;
  /** Called with failures that must not fail the request (a reconciliation while the processor is down). */
  onError: (error: unknown, context: string) => void;
}

/** Events carry whole seconds: a write of ours in the same second must not outrank the event that follows it. */
const wholeSecond = (date: Date): Date => new Date(Math.floor(date.getTime() / 1000) * 1000);

/** Key of the PostgreSQL advisory lock that makes the periodic reconciliation one-at-a-time in a cluster. */
export const RECONCILE_LOCK_KEY = 7_010_001;

/**
 * The local copy of the processor's billing state (docs/billing.md "Billing mirror"): reads answer
 * from it, also while the processor is unreachable; the system's own writes go to the processor
 * first, then here; events and reconciliation keep it right in between.
 */
export class BillingMirrorService {
  readonly #deps: BillingMirrorServiceDeps;
  constructor(deps: BillingMirrorServiceDeps) {
    this.#deps = deps;
  }

  /** An account whose mirror was never built (it predates the mirror) is built from the processor first. */
  async #ensureSynced(account: MirrorAccount): Promise<void> {
    if (await this.#deps.repository.isSynced(account.id)) return;
    await reconcileBilling(this.#deps.reconcile, [account], (error) =>
      this.#deps.onError(error, "first reconciliation of an account; answering from what the mirror holds"),
    );
  }

  async cards(account: MirrorAccount): Promise<Array<MirrorCard & { isDefault: boolean }>> {
    await this.#ensureSynced(account);
    return this.#deps.repository.listCards(account.id);
  }

  async invoices(account: MirrorAccount, limit: number): Promise<MirrorInvoice[]> {
    await this.#ensureSynced(account);
    return this.#deps.repository.listInvoices(account.id, limit);
  }

  async cardSaved(accountId: string, card: MirrorCard, isDefault: boolean): Promise<void> {
    const at = this.#deps.now();
    await this.#deps.repository.transaction(async (writer) => {
      await writer.upsertCard(accountId, card, at);
      if (isDefault) await writer.setDefaultCard(accountId, card.id);
    });
  }

  async cardRemoved(cardId: string): Promise<void> {
    await (await this.#deps.repository.writer()).removeCard(cardId);
  }

  async invoicesSeen(accountId: string, invoices: InvoiceSnapshot[]): Promise<void> {
    const at = this.#deps.now();
    const writer = await this.#deps.repository.writer();
    for (const invoice of invoices) await writer.upsertInvoice(accountId, invoice, at);
  }

  async subscriptionSeen(accountId: string, subscription: SubscriptionSnapshot): Promise<void> {
    const writer = await this.#deps.repository.writer();
    await writer.upsertSubscription(accountId, { ...subscription, at: wholeSecond(this.#deps.now()) });
    if (subscription.latestInvoice) await this.invoicesSeen(accountId, [subscription.latestInvoice]);
  }

  async forgetEndedSubscription(stripeSubscriptionId: string): Promise<void> {
    await (await this.#deps.repository.writer()).forgetEndedSubscription(stripeSubscriptionId);
  }

  /** On demand: rebuild the given accounts (default all) now. */
  reconcile(accounts?: MirrorAccount[]): Promise<ReconcileResult> {
    return reconcileBilling(this.#deps.reconcile, accounts, (error) =>
      this.#deps.onError(error, "reconciliation of an account failed; the next pass retries"),
    );
  }

  /** The periodic pass: skipped (null) when another process of the cluster is running it. */
  async reconcileExclusive(): Promise<ReconcileResult | null> {
    let result: ReconcileResult | null = null;
    await this.#deps.repository.withClusterLock(RECONCILE_LOCK_KEY, async () => {
      result = await this.reconcile();
    });
    return result;
  }
}
