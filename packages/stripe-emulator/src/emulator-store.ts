// In-memory state of the emulator: one Map per resource (insertion-ordered), ids, and an injectable clock.
import { randomBytes } from "node:crypto";
import { noSuch } from "./stripe-errors.ts";
import type { CardDecline } from "./stripe-errors.ts";
import type {
  Customer,
  Invoice,
  InvoiceItem,
  PaymentMethod,
  Price,
  Product,
  SetupIntent,
  Subscription,
} from "./stripe-types.ts";

/**
 * The part of the system's `Clock` (`@fleet/shared`) the emulator reads, declared here because the
 * emulator imports nothing internal: a `systemClock` or `ManualClock` fits as it is.
 */
export interface EmulatorClock {
  /** Milliseconds since the epoch. */
  nowMs(): number;
}

const systemTime: EmulatorClock = { nowMs: () => Date.now() };

export interface StoreOptions {
  /** Current time (default: the system's). */
  clock?: EmulatorClock | undefined;
}

/** A Stripe event waiting to be delivered to the webhook endpoint (kept across restarts). */
export interface PendingEvent {
  event: StripeEvent;
  attempts: number;
  /** Milliseconds since the epoch. */
  nextAttemptAt: number;
}

/** Stripe's event envelope (https://docs.stripe.com/api/events/object). */
export interface StripeEvent {
  id: string;
  object: "event";
  api_version: string;
  created: number;
  data: { object: object; previous_attributes?: Record<string, unknown> };
  livemode: false;
  pending_webhooks: number;
  request: { id: string | null; idempotency_key: string | null };
  type: string;
}

/** How a card behaves when it is verified (setup/attach) or charged. */
export interface CardBehavior {
  decline: CardDecline | null;
  /** false for cards that attach fine but fail when charged (4000000000000341). */
  declineOnSetup: boolean;
}

export interface IdempotentEntry {
  method: string;
  path: string;
  fingerprint: string;
  status: number;
  body: string;
}

const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

export function randomToken(length: number, alphabet = ALPHABET): string {
  const bytes = randomBytes(length);
  let out = "";
  for (const b of bytes) out += alphabet[b % alphabet.length];
  return out;
}

export class EmulatorStore {
  readonly customers = new Map<string, Customer>();
  readonly deletedCustomers = new Set<string>();
  readonly paymentMethods = new Map<string, PaymentMethod>();
  readonly cardBehaviors = new Map<string, CardBehavior>();
  readonly setupIntents = new Map<string, SetupIntent>();
  readonly products = new Map<string, Product>();
  readonly prices = new Map<string, Price>();
  readonly invoiceItems = new Map<string, InvoiceItem>();
  readonly invoices = new Map<string, Invoice>();
  readonly subscriptions = new Map<string, Subscription>();
  readonly idempotency = new Map<string, IdempotentEntry>();
  /** Events not yet acknowledged by the webhook endpoint, oldest first. */
  outbox: PendingEvent[] = [];
  /** Invoices whose payment attempt failed during the current request (-> `invoice.payment_failed`). */
  failedPayments: string[] = [];
  /** Ids handed out so far; part of every id, so ids stay unique across restarts. */
  idCounter = 0;
  private readonly clock: EmulatorClock;

  constructor(opts: StoreOptions = {}) {
    this.clock = opts.clock ?? systemTime;
  }

  /** Unix seconds, like every Stripe timestamp. */
  nowSeconds(): number {
    return Math.floor(this.clock.nowMs() / 1000);
  }

  /** Milliseconds, for delivery scheduling. */
  nowMs(): number {
    return this.clock.nowMs();
  }

  /** `<prefix>_` + the counter in base 62 (5 characters) + random characters, Stripe's lengths. */
  newId(prefix: string): string {
    const length = prefix === "cus" ? 14 : 24;
    let n = ++this.idCounter;
    let counter = "";
    for (let i = 0; i < 5; i++) {
      counter = ALPHABET[n % 62] + counter;
      n = Math.floor(n / 62);
    }
    return `${prefix}_${counter}${randomToken(length - 5)}`;
  }

  customer(id: string, param?: string): Customer {
    const c = this.customers.get(id);
    if (!c) throw noSuch("customer", id, param);
    return c;
  }

  paymentMethod(id: string, param?: string): PaymentMethod {
    const pm = this.paymentMethods.get(id);
    if (!pm) throw noSuch("PaymentMethod", id, param);
    return pm;
  }

  setupIntent(id: string, param?: string): SetupIntent {
    const si = this.setupIntents.get(id);
    if (!si) throw noSuch("setupintent", id, param);
    return si;
  }

  product(id: string, param?: string): Product {
    const p = this.products.get(id);
    if (!p) throw noSuch("product", id, param);
    return p;
  }

  price(id: string, param?: string): Price {
    const p = this.prices.get(id);
    if (!p) throw noSuch("price", id, param);
    return p;
  }

  invoiceItem(id: string, param?: string): InvoiceItem {
    const ii = this.invoiceItems.get(id);
    if (!ii) throw noSuch("invoiceitem", id, param);
    return ii;
  }

  invoice(id: string, param?: string): Invoice {
    const inv = this.invoices.get(id);
    if (!inv) throw noSuch("invoice", id, param);
    return inv;
  }

  subscription(id: string, param?: string): Subscription {
    const sub = this.subscriptions.get(id);
    if (!sub) throw noSuch("subscription", id, param);
    return sub;
  }

  /** Looks up any stored object by its id prefix (used by `expand[]`). */
  lookup(id: string): object | undefined {
    const prefix = id.slice(0, id.indexOf("_"));
    const maps: Record<string, Map<string, object>> = {
      cus: this.customers,
      pm: this.paymentMethods,
      seti: this.setupIntents,
      prod: this.products,
      price: this.prices,
      ii: this.invoiceItems,
      in: this.invoices,
      sub: this.subscriptions,
    };
    return maps[prefix]?.get(id);
  }
}
