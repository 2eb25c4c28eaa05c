import type { BillingMirror } from "./billing-mirror.ts";
import type { MirrorAccount, MirrorCard, MirrorInvoice } from "@fleet/db";
import type { Clock } from "@fleet/shared";
import type { InvoiceSnapshot, PaymentsGateway } from "../../integrations/stripe/payments-gateway.ts";
import type { SubscriptionSnapshot } from "../../integrations/stripe/subscription-gateway.ts";
import { type ReconcileBillingDeps, type ReconcileResult, reconcileBilling } from "./reconcile-billing.ts";

export interface BillingMirrorServiceDeps {
  repository: BillingMirror;
  reconcile: ReconcileBillingDeps;
  /**
   * The processor, read by the lists first (a short timeout, no retries): while it answers, the
   * lists show its current state; only when it does not do they answer from the mirror.
   */
  live?: Pick<PaymentsGateway, "listCards" | "listInvoices">;
  clock: Clock;
  /** Called with failures that must not fail the request (a reconciliation while the processor is down). */
  onError: (error: unknown, context: string) => void;
}

/** Ids in byte order (the mirror's `collate "C"`): the processor's ids grow with time in that order. */
const byteOrder = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** Events carry whole seconds: a write of ours in the same second must not outrank the event that follows it. */
const wholeSecond = (date: Date): Date => new Date(Math.floor(date.getTime() / 1000) * 1000);

/**
 * How the lists read the processor (docs/billing.md "Billing mirror"): one try of at most 8 s,
 * then the mirror answers. An unreachable processor (refused, reset) fails at once; the SDK's usual
 * retries and 10 s timeout would hold a list for half a minute while it hangs.
 */
export const LIVE_BILLING_READS = { timeout: 8_000, maxNetworkRetries: 0 } as const;

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

  /**
   * The account's cards, oldest first: the processor's current list while it answers (a card saved
   * or removed a moment ago, whose event has not arrived yet, is listed as it now is); the mirror's
   * when it does not (docs/billing.md "Billing mirror").
   */
  async cards(account: MirrorAccount): Promise<MirrorCard[]> {
    await this.#ensureSynced(account);
    const live = await this.#live("cards", (gateway) => gateway.listCards(account.stripeCustomerId));
    if (!live) return this.#deps.repository.listCards(account.id);
    return live
      .filter((card) => card.type === "card")
      .sort((a, b) => a.created.getTime() - b.created.getTime() || byteOrder(a.id, b.id));
  }

  /** The account's invoices, newest first, at most `limit`: the processor's, else the mirror's (as `cards`). */
  async invoices(account: MirrorAccount, limit: number): Promise<MirrorInvoice[]> {
    await this.#ensureSynced(account);
    const live = await this.#live("invoices", (gateway) => gateway.listInvoices(account.stripeCustomerId, limit));
    if (!live) return this.#deps.repository.listInvoices(account.id, limit);
    return live.sort((a, b) => b.created.getTime() - a.created.getTime() || byteOrder(b.id, a.id)).slice(0, limit);
  }

  /** A read of the processor, or undefined when there is no live gateway or it did not answer. */
  async #live<T>(what: string, read: (gateway: NonNullable<BillingMirrorServiceDeps["live"]>) => Promise<T>) {
    const gateway = this.#deps.live;
    if (!gateway) return undefined;
    try {
      return await read(gateway);
    } catch (error) {
      this.#deps.onError(error, `the payment processor did not answer; listing ${what} from the billing mirror`);
      return undefined;
    }
  }

  async cardSaved(accountId: string, card: MirrorCard, isDefault: boolean): Promise<void> {
    const at = this.#deps.clock.now();
    await this.#deps.repository.accountTransaction(accountId, async (writer) => {
      await writer.upsertCard(accountId, card, at);
      if (isDefault) await writer.setDefaultCard(accountId, card.id);
    });
  }

  async cardRemoved(cardId: string): Promise<void> {
    await (await this.#deps.repository.writer()).removeCard(cardId);
  }

  async invoicesSeen(accountId: string, invoices: InvoiceSnapshot[]): Promise<void> {
    const at = this.#deps.clock.now();
    const writer = await this.#deps.repository.writer();
    for (const invoice of invoices) await writer.upsertInvoice(accountId, invoice, at);
  }

  async subscriptionSeen(accountId: string, subscription: SubscriptionSnapshot): Promise<void> {
    const writer = await this.#deps.repository.writer();
    await writer.upsertSubscription(accountId, { ...subscription, at: wholeSecond(this.#deps.clock.now()) });
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
