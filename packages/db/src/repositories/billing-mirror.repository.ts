import { sql } from "kysely";
import { type Database, type Query, queryOf, type Row } from "../database.ts";
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

const CARD_COLUMNS = ["id", "type", "brand", "last4", "exp_month", "exp_year", "created_at", "is_default"] as const;
type CardRow = Pick<Row<"billing_payment_methods">, (typeof CARD_COLUMNS)[number]>;

const toCard = (r: CardRow): MirrorCard & { isDefault: boolean } => ({
  id: r.id,
  type: r.type,
  brand: r.brand,
  last4: r.last4,
  expMonth: r.exp_month,
  expYear: r.exp_year,
  created: r.created_at,
  isDefault: r.is_default,
});

const INVOICE_COLUMNS = [
  "id",
  "stripe_subscription_id",
  "number",
  "description",
  "currency",
  "amount_due",
  "amount_paid",
  "amount_remaining",
  "subtotal",
  "subtotal_excluding_tax",
  "total",
  "tax",
  "total_excluding_tax",
  "due_date",
  "invoice_pdf",
  "status",
  "period_start",
  "period_end",
  "paid",
  "attempted",
  "attempt_count",
  "created_at",
] as const;
type InvoiceRow = Pick<Row<"billing_invoices">, (typeof INVOICE_COLUMNS)[number]>;

// bigint columns: the drivers hand them over as text.
const toInvoice = (r: InvoiceRow): MirrorInvoice => ({
  id: r.id,
  subscriptionId: r.stripe_subscription_id,
  number: r.number,
  description: r.description,
  currency: r.currency,
  amountDue: toNumber(r.amount_due),
  amountPaid: toNumber(r.amount_paid),
  amountRemaining: toNumber(r.amount_remaining),
  subtotal: toNumber(r.subtotal),
  subtotalExcludingTax: toNumber(r.subtotal_excluding_tax),
  total: toNumber(r.total),
  tax: toNumber(r.tax),
  totalExcludingTax: toNumber(r.total_excluding_tax),
  dueDate: r.due_date,
  invoicePdf: r.invoice_pdf,
  status: r.status,
  periodStart: r.period_start,
  periodEnd: r.period_end,
  paid: r.paid,
  attempted: r.attempted,
  attemptCount: r.attempt_count,
  created: r.created_at,
});

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
    // Raw: an advisory lock is a function call, not a table statement.
    const { rows } = await sql<{ locked: boolean }>`select pg_try_advisory_xact_lock(${key}) as locked`.execute(
      this.#q.kysely,
    );
    return rows[0]?.locked === true;
  }

  /** True the first time an event id is seen; false for a repeat (it was processed before). */
  async recordEvent(eventId: string, type: string, at: Date): Promise<boolean> {
    const rows = await this.#q.kysely
      .insertInto("stripe_webhook_events")
      .values({ id: eventId, type, received_at: at })
      .onConflict((oc) => oc.column("id").doNothing())
      .returning("id")
      .execute();
    return rows.length === 1;
  }

  /** The account, locked for the rest of the transaction (see `lockAccount`). */
  async accountByCustomer(customerId: string): Promise<MirrorAccount | null> {
    const r = await this.#q.kysely
      .selectFrom("billing_accounts")
      .select(["id", "organization_id"])
      .where("stripe_customer_id", "=", customerId)
      .forNoKeyUpdate()
      .executeTakeFirst();
    return r ? { id: r.id, organizationId: r.organization_id, stripeCustomerId: customerId } : null;
  }

  /**
   * Every transaction that writes one account's mirror takes this lock before its first row, so two
   * of them (the API's own write and a processor event about the same change) run one after the
   * other instead of locking the account's cards in opposite orders and deadlocking. Not FOR
   * UPDATE: a card's or invoice's foreign key check (FOR KEY SHARE) on the account is not blocked.
   */
  async lockAccount(accountId: string): Promise<void> {
    await this.#q.kysely
      .selectFrom("billing_accounts")
      .select("id")
      .where("id", "=", accountId)
      .forNoKeyUpdate()
      .execute();
  }

  async upsertCard(accountId: string, card: MirrorCard, at: Date): Promise<void> {
    await this.#q.kysely
      .insertInto("billing_payment_methods")
      .values({
        id: card.id,
        account_id: accountId,
        type: card.type,
        brand: card.brand,
        last4: card.last4,
        exp_month: card.expMonth,
        exp_year: card.expYear,
        created_at: card.created,
        synced_at: at,
      })
      .onConflict((oc) =>
        oc.column("id").doUpdateSet((eb) => ({
          account_id: eb.ref("excluded.account_id"),
          type: eb.ref("excluded.type"),
          brand: eb.ref("excluded.brand"),
          last4: eb.ref("excluded.last4"),
          exp_month: eb.ref("excluded.exp_month"),
          exp_year: eb.ref("excluded.exp_year"),
          synced_at: eb.ref("excluded.synced_at"),
        })),
      )
      .execute();
  }

  async removeInvoice(invoiceId: string): Promise<void> {
    await this.#q.kysely.deleteFrom("billing_invoices").where("id", "=", invoiceId).execute();
  }

  async removeCard(cardId: string): Promise<void> {
    await this.#q.kysely.deleteFrom("billing_payment_methods").where("id", "=", cardId).execute();
  }

  /** Exactly `cardId` (or none) becomes the account's default. */
  async setDefaultCard(accountId: string, cardId: string | null): Promise<void> {
    await this.#q.kysely
      .updateTable("billing_payment_methods")
      .set((eb) => ({
        is_default: cardId === null ? eb.lit(false) : eb.parens(eb("id", "=", cardId)).$castTo<boolean>(),
      }))
      .where("account_id", "=", accountId)
      .where((eb) =>
        cardId === null
          ? eb("is_default", "=", true)
          : eb("is_default", "<>", eb.parens(eb("id", "=", cardId)).$castTo<boolean>()),
      )
      .execute();
  }

  async upsertInvoice(accountId: string, inv: MirrorInvoice, at: Date): Promise<void> {
    await this.#q.kysely
      .insertInto("billing_invoices")
      .values({
        id: inv.id,
        account_id: accountId,
        stripe_subscription_id: inv.subscriptionId,
        number: inv.number,
        description: inv.description,
        currency: inv.currency,
        amount_due: inv.amountDue,
        amount_paid: inv.amountPaid,
        amount_remaining: inv.amountRemaining,
        subtotal: inv.subtotal,
        subtotal_excluding_tax: inv.subtotalExcludingTax,
        total: inv.total,
        tax: inv.tax,
        total_excluding_tax: inv.totalExcludingTax,
        due_date: inv.dueDate,
        invoice_pdf: inv.invoicePdf,
        status: inv.status,
        period_start: inv.periodStart,
        period_end: inv.periodEnd,
        paid: inv.paid,
        attempted: inv.attempted,
        attempt_count: inv.attemptCount,
        created_at: inv.created,
        synced_at: at,
      })
      .onConflict((oc) =>
        oc
          .column("id")
          .doUpdateSet((eb) => ({
            stripe_subscription_id: eb.ref("excluded.stripe_subscription_id"),
            number: eb.ref("excluded.number"),
            description: eb.ref("excluded.description"),
            currency: eb.ref("excluded.currency"),
            amount_due: eb.ref("excluded.amount_due"),
            amount_paid: eb.ref("excluded.amount_paid"),
            amount_remaining: eb.ref("excluded.amount_remaining"),
            subtotal: eb.ref("excluded.subtotal"),
            subtotal_excluding_tax: eb.ref("excluded.subtotal_excluding_tax"),
            total: eb.ref("excluded.total"),
            tax: eb.ref("excluded.tax"),
            total_excluding_tax: eb.ref("excluded.total_excluding_tax"),
            due_date: eb.ref("excluded.due_date"),
            invoice_pdf: eb.ref("excluded.invoice_pdf"),
            status: eb.ref("excluded.status"),
            period_start: eb.ref("excluded.period_start"),
            period_end: eb.ref("excluded.period_end"),
            paid: eb.ref("excluded.paid"),
            attempted: eb.ref("excluded.attempted"),
            attempt_count: eb.fn<number>("greatest", [
              eb.ref("billing_invoices.attempt_count"),
              eb.ref("excluded.attempt_count"),
            ]),
            synced_at: eb.ref("excluded.synced_at"),
          }))
          // A paid or void invoice is final at the processor: a late event about an earlier state never undoes it.
          .where((eb) =>
            eb.or([
              eb("billing_invoices.status", "not in", ["paid", "void"]),
              eb("billing_invoices.status", "=", eb.ref("excluded.status")),
            ]),
          ),
      )
      .execute();
  }

  /**
   * Records the subscription's status unless a newer report is already there. A subscription this
   * system has not recorded yet (its create answer still in flight) is inserted from the report.
   */
  async upsertSubscription(accountId: string, sub: MirrorSubscription): Promise<void> {
    const updated = await this.#q.kysely
      .updateTable("billing_subscriptions")
      .set({ status: sub.status, status_at: sub.at, updated_at: sql<Date>`now()` })
      .where("stripe_subscription_id", "=", sub.id)
      .where((eb) => eb.or([eb("status_at", "is", null), eb("status_at", "<=", sub.at)]))
      .returning("id")
      .execute();
    if (updated.length > 0 || sub.status === "canceled" || sub.status === "incomplete_expired") return;
    await this.#q.kysely
      .insertInto("billing_subscriptions")
      .values({
        id: crypto.randomUUID(),
        account_id: accountId,
        stripe_subscription_id: sub.id,
        stripe_item_id: sub.itemId,
        currency: sub.currency,
        quantity: sub.quantity,
        status: sub.status,
        status_at: sub.at,
        created_at: sql<Date>`now()`,
        updated_at: sql<Date>`now()`,
      })
      .onConflict((oc) => oc.doNothing())
      .execute();
  }

  /** Drops the account's record of a subscription that ended, so a new one can be recorded. */
  async forgetEndedSubscription(stripeSubscriptionId: string): Promise<void> {
    await this.#q.kysely
      .deleteFrom("billing_subscriptions")
      .where("stripe_subscription_id", "=", stripeSubscriptionId)
      .where("status", "in", ["canceled", "incomplete_expired"])
      .execute();
  }

  /** Reconciliation: the account's cards become exactly `cards`. */
  async replaceCards(accountId: string, cards: MirrorCard[], defaultId: string | null, at: Date): Promise<void> {
    await this.#q.kysely
      .deleteFrom("billing_payment_methods")
      .where("account_id", "=", accountId)
      .where((eb) => eb.not(eb("id", "=", eb.fn.any(eb.val(cards.map((c) => c.id))))))
      .execute();
    for (const card of cards) await this.upsertCard(accountId, card, at);
    await this.setDefaultCard(accountId, defaultId);
  }

  async markSynced(accountId: string, at: Date): Promise<void> {
    await this.#q.kysely
      .insertInto("billing_mirror_syncs")
      .values({ account_id: accountId, synced_at: at })
      .onConflict((oc) => oc.column("account_id").doUpdateSet((eb) => ({ synced_at: eb.ref("excluded.synced_at") })))
      .execute();
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

  /** Writes outside a transaction (each statement on its own). */
  async writer(): Promise<BillingMirrorWriter> {
    return new BillingMirrorWriter(queryOf(this.#db));
  }

  /** Oldest first, like the processor lists them. */
  async listCards(accountId: string): Promise<Array<MirrorCard & { isDefault: boolean }>> {
    const rows = await this.#db.query.kysely
      .selectFrom("billing_payment_methods")
      .select(CARD_COLUMNS)
      .where("account_id", "=", accountId)
      .orderBy("created_at")
      .orderBy("id")
      .execute();
    return rows.map(toCard);
  }

  /** Newest first, at most `limit`. */
  async listInvoices(accountId: string, limit: number): Promise<MirrorInvoice[]> {
    const rows = await this.#db.query.kysely
      .selectFrom("billing_invoices")
      .select(INVOICE_COLUMNS)
      .where("account_id", "=", accountId)
      .orderBy("created_at", "desc")
      // Same second: the processor's ids grow with time in byte order (the emulator's do).
      .orderBy("id", (ob) => ob.collate("C").desc())
      .limit(limit)
      .execute();
    return rows.map(toInvoice);
  }

  /** The oldest open invoice of the account (the one a failed payment left). */
  async openInvoice(accountId: string): Promise<MirrorInvoice | null> {
    const row = await this.#db.query.kysely
      .selectFrom("billing_invoices")
      .select(INVOICE_COLUMNS)
      .where("account_id", "=", accountId)
      .where("status", "=", "open")
      .orderBy("created_at")
      .orderBy("id")
      .limit(1)
      .executeTakeFirst();
    return row ? toInvoice(row) : null;
  }

  async subscriptionStatus(accountId: string): Promise<{ id: string; status: string } | null> {
    const r = await this.#db.query.kysely
      .selectFrom("billing_subscriptions")
      .select(["stripe_subscription_id", "status"])
      .where("account_id", "=", accountId)
      .executeTakeFirst();
    return r ? { id: r.stripe_subscription_id, status: r.status } : null;
  }

  async hasCard(accountId: string): Promise<boolean> {
    const row = await this.#db.query.kysely
      .selectFrom("billing_payment_methods")
      .select("id")
      .where("account_id", "=", accountId)
      .limit(1)
      .executeTakeFirst();
    return row !== undefined;
  }

  async isSynced(accountId: string): Promise<boolean> {
    const row = await this.#db.query.kysely
      .selectFrom("billing_mirror_syncs")
      .select("account_id")
      .where("account_id", "=", accountId)
      .executeTakeFirst();
    return row !== undefined;
  }

  /** Every billing account, for a full reconciliation pass. */
  async accounts(): Promise<MirrorAccount[]> {
    const rows = await this.#db.query.kysely
      .selectFrom("billing_accounts")
      .select(["id", "organization_id", "stripe_customer_id"])
      .orderBy("id")
      .execute();
    return rows.map((r) => ({ id: r.id, organizationId: r.organization_id, stripeCustomerId: r.stripe_customer_id }));
  }
}
