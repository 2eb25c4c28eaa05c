import { type Database, type Query, queryOf } from "../database.ts";
import { toNumber } from "./sql-values.ts";

/** A card as mirrored from the processor. */
export interface MirrorCard {
  id: string;
  type: string;
  brand: string;
  last4: string;
  expMonth: number;
  expYear: number;
  created: Date;
}

/** An invoice as mirrored from the processor, in its minor units. */
export interface MirrorInvoice {
  id: string;
  subscriptionId: string | null;
  number: string | null;
  description: string | null;
  currency: string;
  amountDue: number;
  amountPaid: number;
  amountRemaining: number;
  subtotal: number;
  subtotalExcludingTax: number;
  total: number;
  tax: number;
  totalExcludingTax: number;
  dueDate: Date | null;
  invoicePdf: string | null;
  status: string;
  periodStart: Date;
  periodEnd: Date;
  paid: boolean;
  attempted: boolean;
  attemptCount: number;
  created: Date;
}

export interface MirrorSubscription {
  id: string;
  itemId: string;
  currency: string;
  quantity: number;
  status: string;
  /** When the processor reported this status (an event's `created`, or the reconciliation time). */
  at: Date;
}

export interface MirrorAccount {
  id: string;
  organizationId: string;
  stripeCustomerId: string;
}

type Row = Record<string, unknown>;
const date = (v: unknown): Date => (v instanceof Date ? v : new Date(String(v)));
const dateOrNull = (v: unknown): Date | null => (v === null || v === undefined ? null : date(v));
const strOrNull = (v: unknown): string | null => (v === null || v === undefined ? null : String(v));

const toCard = (r: Row): MirrorCard & { isDefault: boolean } => ({
  id: String(r.id),
  type: String(r.type),
  brand: String(r.brand),
  last4: String(r.last4),
  expMonth: toNumber(r.exp_month),
  expYear: toNumber(r.exp_year),
  created: date(r.created_at),
  isDefault: r.is_default === true,
});

const toInvoice = (r: Row): MirrorInvoice => ({
  id: String(r.id),
  subscriptionId: strOrNull(r.stripe_subscription_id),
  number: strOrNull(r.number),
  description: strOrNull(r.description),
  currency: String(r.currency),
  amountDue: toNumber(r.amount_due),
  amountPaid: toNumber(r.amount_paid),
  amountRemaining: toNumber(r.amount_remaining),
  subtotal: toNumber(r.subtotal),
  subtotalExcludingTax: toNumber(r.subtotal_excluding_tax),
  total: toNumber(r.total),
  tax: toNumber(r.tax),
  totalExcludingTax: toNumber(r.total_excluding_tax),
  dueDate: dateOrNull(r.due_date),
  invoicePdf: strOrNull(r.invoice_pdf),
  status: String(r.status),
  periodStart: date(r.period_start),
  periodEnd: date(r.period_end),
  paid: r.paid === true,
  attempted: r.attempted === true,
  attemptCount: toNumber(r.attempt_count),
  created: date(r.created_at),
});

const UPSERT_CARD = `
insert into billing_payment_methods (id, account_id, type, brand, last4, exp_month, exp_year, created_at, synced_at)
values ($1, $2, $3, $4, $5, $6, $7, $8, $9)
on conflict (id) do update set account_id = excluded.account_id, type = excluded.type, brand = excluded.brand,
  last4 = excluded.last4, exp_month = excluded.exp_month, exp_year = excluded.exp_year, synced_at = excluded.synced_at`;

// A paid or void invoice is final at the processor: a late event about an earlier state never undoes it.
const UPSERT_INVOICE = `
insert into billing_invoices (id, account_id, stripe_subscription_id, number, description, currency, amount_due,
  amount_paid, amount_remaining, subtotal, subtotal_excluding_tax, total, tax, total_excluding_tax, due_date,
  invoice_pdf, status, period_start, period_end, paid, attempted, attempt_count, created_at, synced_at)
values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24)
on conflict (id) do update set stripe_subscription_id = excluded.stripe_subscription_id, number = excluded.number,
  description = excluded.description, currency = excluded.currency, amount_due = excluded.amount_due,
  amount_paid = excluded.amount_paid, amount_remaining = excluded.amount_remaining, subtotal = excluded.subtotal,
  subtotal_excluding_tax = excluded.subtotal_excluding_tax, total = excluded.total, tax = excluded.tax,
  total_excluding_tax = excluded.total_excluding_tax, due_date = excluded.due_date, invoice_pdf = excluded.invoice_pdf,
  status = excluded.status, period_start = excluded.period_start, period_end = excluded.period_end,
  paid = excluded.paid, attempted = excluded.attempted,
  attempt_count = greatest(billing_invoices.attempt_count, excluded.attempt_count), synced_at = excluded.synced_at
where billing_invoices.status not in ('paid', 'void') or billing_invoices.status = excluded.status`;

// Not FOR UPDATE: a card's or invoice's foreign key check (FOR KEY SHARE) on the account is not blocked.
const ACCOUNT_LOCK = "for no key update";

/** The writes of the mirror, on one connection (inside a transaction when its caller opened one). */
export class BillingMirrorWriter {
  readonly #q: Query;
  constructor(query: Query) {
    this.#q = query;
  }

  /**
   * Takes the cluster-wide reconciliation lock for the rest of this transaction (a PostgreSQL
   * advisory lock); false when another process holds it.
   */
  async tryClusterLock(key: number): Promise<boolean> {
    const rows = await this.#q<{ locked: boolean }>("select pg_try_advisory_xact_lock($1) as locked", [key]);
    return rows[0]?.locked === true;
  }

  /** True the first time an event id is seen; false for a repeat (it was processed before). */
  async recordEvent(eventId: string, type: string, at: Date): Promise<boolean> {
    const rows = await this.#q(
      "insert into stripe_webhook_events (id, type, received_at) values ($1, $2, $3) on conflict (id) do nothing returning id",
      [eventId, type, at],
    );
    return rows.length === 1;
  }

  /** The account, locked for the rest of the transaction (see `lockAccount`). */
  async accountByCustomer(customerId: string): Promise<MirrorAccount | null> {
    const rows = await this.#q<Row>(
      `select id, organization_id, stripe_customer_id from billing_accounts where stripe_customer_id = $1 ${ACCOUNT_LOCK}`,
      [customerId],
    );
    const r = rows[0];
    return r ? { id: String(r.id), organizationId: String(r.organization_id), stripeCustomerId: customerId } : null;
  }

  /**
   * Every transaction that writes one account's mirror takes this lock before its first row, so two
   * of them (the API's own write and a processor event about the same change) run one after the
   * other instead of locking the account's cards in opposite orders and deadlocking.
   */
  async lockAccount(accountId: string): Promise<void> {
    await this.#q(`select id from billing_accounts where id = $1 ${ACCOUNT_LOCK}`, [accountId]);
  }

  async upsertCard(accountId: string, card: MirrorCard, at: Date): Promise<void> {
    await this.#q(UPSERT_CARD, [
      card.id,
      accountId,
      card.type,
      card.brand,
      card.last4,
      card.expMonth,
      card.expYear,
      card.created,
      at,
    ]);
  }

  async removeInvoice(invoiceId: string): Promise<void> {
    await this.#q("delete from billing_invoices where id = $1", [invoiceId]);
  }

  async removeCard(cardId: string): Promise<void> {
    await this.#q("delete from billing_payment_methods where id = $1", [cardId]);
  }

  /** Exactly `cardId` (or none) becomes the account's default. */
  async setDefaultCard(accountId: string, cardId: string | null): Promise<void> {
    await this.#q(
      "update billing_payment_methods set is_default = coalesce(id = $2::text, false) where account_id = $1 and is_default <> coalesce(id = $2::text, false)",
      [accountId, cardId],
    );
  }

  async upsertInvoice(accountId: string, inv: MirrorInvoice, at: Date): Promise<void> {
    await this.#q(UPSERT_INVOICE, [
      inv.id,
      accountId,
      inv.subscriptionId,
      inv.number,
      inv.description,
      inv.currency,
      inv.amountDue,
      inv.amountPaid,
      inv.amountRemaining,
      inv.subtotal,
      inv.subtotalExcludingTax,
      inv.total,
      inv.tax,
      inv.totalExcludingTax,
      inv.dueDate,
      inv.invoicePdf,
      inv.status,
      inv.periodStart,
      inv.periodEnd,
      inv.paid,
      inv.attempted,
      inv.attemptCount,
      inv.created,
      at,
    ]);
  }

  /**
   * Records the subscription's status unless a newer report is already there. A subscription this
   * system has not recorded yet (its create answer still in flight) is inserted from the report.
   */
  async upsertSubscription(accountId: string, sub: MirrorSubscription): Promise<void> {
    const updated = await this.#q(
      `update billing_subscriptions set status = $2, status_at = $3, updated_at = now()
       where stripe_subscription_id = $1 and (status_at is null or status_at <= $3) returning id`,
      [sub.id, sub.status, sub.at],
    );
    if (updated.length > 0 || sub.status === "canceled" || sub.status === "incomplete_expired") return;
    await this.#q(
      `insert into billing_subscriptions (id, account_id, stripe_subscription_id, stripe_item_id, currency, quantity,
         status, status_at, created_at, updated_at)
       values ($1, $2, $3, $4, $5, $6, $7, $8, now(), now()) on conflict do nothing`,
      [crypto.randomUUID(), accountId, sub.id, sub.itemId, sub.currency, sub.quantity, sub.status, sub.at],
    );
  }

  /** Drops the account's record of a subscription that ended, so a new one can be recorded. */
  async forgetEndedSubscription(stripeSubscriptionId: string): Promise<void> {
    await this.#q(
      "delete from billing_subscriptions where stripe_subscription_id = $1 and status in ('canceled', 'incomplete_expired')",
      [stripeSubscriptionId],
    );
  }

  /** Reconciliation: the account's cards become exactly `cards`. */
  async replaceCards(accountId: string, cards: MirrorCard[], defaultId: string | null, at: Date): Promise<void> {
    await this.#q("delete from billing_payment_methods where account_id = $1 and not (id = any($2::text[]))", [
      accountId,
      cards.map((c) => c.id),
    ]);
    for (const card of cards) await this.upsertCard(accountId, card, at);
    await this.setDefaultCard(accountId, defaultId);
  }

  async markSynced(accountId: string, at: Date): Promise<void> {
    await this.#q(
      "insert into billing_mirror_syncs (account_id, synced_at) values ($1, $2) on conflict (account_id) do update set synced_at = excluded.synced_at",
      [accountId, at],
    );
  }
}

/**
 * The local billing mirror (docs/billing.md): cards, invoices and subscription status as the
 * processor last reported them, written from its events, the system's own writes and reconciliation.
 */
export class BillingMirrorRepository {
  readonly #db: Database;
  constructor(db: Database) {
    this.#db = db;
  }

  async #query(): Promise<Query> {
    return queryOf(this.#db);
  }

  /** Writes outside a transaction (each statement on its own). */
  async writer(): Promise<BillingMirrorWriter> {
    return new BillingMirrorWriter(await this.#query());
  }

  /** Oldest first, like the processor lists them. */
  async listCards(accountId: string): Promise<Array<MirrorCard & { isDefault: boolean }>> {
    const q = await this.#query();
    const rows = await q<Row>("select * from billing_payment_methods where account_id = $1 order by created_at, id", [
      accountId,
    ]);
    return rows.map(toCard);
  }

  /** Newest first, at most `limit`. */
  async listInvoices(accountId: string, limit: number): Promise<MirrorInvoice[]> {
    const q = await this.#query();
    const rows = await q<Row>(
      // Same second: the processor's ids grow with time in byte order (the emulator's do).
      'select * from billing_invoices where account_id = $1 order by created_at desc, id collate "C" desc limit $2',
      [accountId, limit],
    );
    return rows.map(toInvoice);
  }

  /** The oldest open invoice of the account (the one a failed payment left). */
  async openInvoice(accountId: string): Promise<MirrorInvoice | null> {
    const q = await this.#query();
    const rows = await q<Row>(
      "select * from billing_invoices where account_id = $1 and status = 'open' order by created_at, id limit 1",
      [accountId],
    );
    return rows[0] ? toInvoice(rows[0]) : null;
  }

  async subscriptionStatus(accountId: string): Promise<{ id: string; status: string } | null> {
    const q = await this.#query();
    const rows = await q<Row>(
      "select stripe_subscription_id, status from billing_subscriptions where account_id = $1",
      [accountId],
    );
    const r = rows[0];
    return r ? { id: String(r.stripe_subscription_id), status: String(r.status) } : null;
  }

  async hasCard(accountId: string): Promise<boolean> {
    const q = await this.#query();
    return (await q("select 1 from billing_payment_methods where account_id = $1 limit 1", [accountId])).length > 0;
  }

  async isSynced(accountId: string): Promise<boolean> {
    const q = await this.#query();
    return (await q("select 1 from billing_mirror_syncs where account_id = $1", [accountId])).length > 0;
  }

  /** Every billing account, for a full reconciliation pass. */
  async accounts(): Promise<MirrorAccount[]> {
    const q = await this.#query();
    const rows = await q<Row>("select id, organization_id, stripe_customer_id from billing_accounts order by id");
    return rows.map((r) => ({
      id: String(r.id),
      organizationId: String(r.organization_id),
      stripeCustomerId: String(r.stripe_customer_id),
    }));
  }
}
