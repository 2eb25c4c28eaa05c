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

/** Whether the store notes what it hands out (a request that may change something is running). */
interface Recording {
  recording: boolean;
}

/**
 * A Map that, while its store records, notes every id whose object it hands out, sets or deletes:
 * routes change objects in place, so an object handed to a changing request may have changed. The
 * events and the state file then look at those objects only, not at every object (whose number
 * grows with the fleet).
 */
export class TrackedMap<V> extends Map<string, V> {
  readonly touched = new Set<string>();
  readonly #owner: Recording;

  constructor(owner: Recording) {
    super();
    this.#owner = owner;
  }

  /** The value without noting it (the store's own readers: events, persistence). */
  peek(id: string): V | undefined {
    return super.get(id);
  }

  override get(id: string): V | undefined {
    if (this.#owner.recording) this.touched.add(id);
    return super.get(id);
  }

  override set(id: string, value: V): this {
    if (this.#owner.recording) this.touched.add(id);
    return super.set(id, value);
  }

  override delete(id: string): boolean {
    if (this.#owner.recording) this.touched.add(id);
    return super.delete(id);
  }

  override *entries(): MapIterator<[string, V]> {
    for (const entry of super.entries()) {
      if (this.#owner.recording) this.touched.add(entry[0]);
      yield entry;
    }
  }

  override *values(): MapIterator<V> {
    for (const [, value] of this.entries()) yield value;
  }

  override [Symbol.iterator](): MapIterator<[string, V]> {
    return this.entries();
  }

  override forEach(callback: (value: V, key: string, map: Map<string, V>) => void, thisArg?: unknown): void {
    for (const [id, value] of this.entries()) callback.call(thisArg, value, id, this);
  }
}

/** The store's maps by name: what the state file and the events read. */
export const STORE_MAPS = [
  "customers",
  "paymentMethods",
  "cardBehaviors",
  "setupIntents",
  "products",
  "prices",
  "invoiceItems",
  "invoices",
  "subscriptions",
  "idempotency",
] as const;
export type TStoreMap = (typeof STORE_MAPS)[number];
/** Ids per map, from `takeTouched`. */
export type Touched = Record<TStoreMap, string[]>;

export class EmulatorStore {
  /** Set for the synchronous part of a request that may change something (see TrackedMap). */
  recording = false;
  readonly customers = new TrackedMap<Customer>(this);
  readonly deletedCustomers = new Set<string>();
  readonly paymentMethods = new TrackedMap<PaymentMethod>(this);
  readonly cardBehaviors = new TrackedMap<CardBehavior>(this);
  readonly setupIntents = new TrackedMap<SetupIntent>(this);
  readonly products = new TrackedMap<Product>(this);
  readonly prices = new TrackedMap<Price>(this);
  readonly invoiceItems = new TrackedMap<InvoiceItem>(this);
  readonly invoices = new TrackedMap<Invoice>(this);
  readonly subscriptions = new TrackedMap<Subscription>(this);
  readonly idempotency = new TrackedMap<IdempotentEntry>(this);
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

  /** The ids each map handed out, set or deleted since the last call (see TrackedMap); clears them. */
  takeTouched(): Touched {
    const touched = {} as Touched;
    for (const key of STORE_MAPS) {
      const map = this[key] as TrackedMap<unknown>;
      touched[key] = [...map.touched];
      map.touched.clear();
    }
    return touched;
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
