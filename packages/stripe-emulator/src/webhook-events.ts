// Stripe-like events: derived from what a request changed, signed like Stripe, delivered with retries.
import { createHmac } from "node:crypto";
import type { EmulatorStore, StripeEvent, Touched, TrackedMap } from "./emulator-store.ts";
import { randomToken } from "./emulator-store.ts";

/** The API version the events claim (the pinned SDK's). */
export const EVENT_API_VERSION = "2026-10-28.endive";

export interface WebhookEndpoint {
  url: string;
  /** `whsec_...`; signs `Stripe-Signature`. */
  secret: string;
}

type Tracked = "customers" | "paymentMethods" | "setupIntents" | "subscriptions" | "invoices";
// Order of emission inside one request: the order Stripe announces a subscription's first invoice in.
const TRACKED: Tracked[] = ["customers", "paymentMethods", "setupIntents", "subscriptions", "invoices"];

type Obj = Record<string, unknown>;

/** Top-level keys whose values differ, with their previous values (Stripe's `previous_attributes`). */
const previousAttributes = (before: Obj, after: Obj): Obj => {
  const changed: Obj = {};
  for (const key of Object.keys(after)) {
    if (JSON.stringify(before[key]) !== JSON.stringify(after[key])) changed[key] = before[key] ?? null;
  }
  return changed;
};

const typesFor = (kind: Tracked, before: Obj | undefined, after: Obj): string[] => {
  switch (kind) {
    case "customers":
      return [before ? "customer.updated" : "customer.created"];
    case "paymentMethods":
      if ((before?.customer ?? null) === null && after.customer !== null) return ["payment_method.attached"];
      if (before && before.customer !== null && after.customer === null) return ["payment_method.detached"];
      return before && after.customer !== null ? ["payment_method.updated"] : [];
    case "setupIntents": {
      const types = before ? [] : ["setup_intent.created"];
      if (before?.status !== after.status && after.status === "succeeded") types.push("setup_intent.succeeded");
      if (after.last_setup_error && JSON.stringify(before?.last_setup_error) !== JSON.stringify(after.last_setup_error))
        types.push("setup_intent.setup_failed");
      return types;
    }
    case "subscriptions":
      if (!before) return ["customer.subscription.created"];
      if (after.status === "canceled" && before.status !== "canceled") return ["customer.subscription.deleted"];
      return ["customer.subscription.updated"];
    case "invoices": {
      const types = before ? [] : ["invoice.created"];
      const from = before?.status ?? "draft";
      if (from !== after.status) {
        if (after.status === "open") types.push("invoice.finalized");
        if (after.status === "paid") {
          if (from === "draft") types.push("invoice.finalized");
          types.push("invoice.paid", "invoice.payment_succeeded");
        }
        if (after.status === "void") types.push("invoice.voided");
        if (after.status === "uncollectible") types.push("invoice.marked_uncollectible");
      }
      if (before && types.length === 0) types.push("invoice.updated");
      return types;
    }
  }
};

/**
 * Remembers the JSON of every tracked object and turns the difference after a request into events,
 * so every route announces its changes without knowing about events.
 */
export class EventRecorder {
  readonly #store: EmulatorStore;
  readonly #seen = new Map<string, string>();

  constructor(store: EmulatorStore) {
    this.#store = store;
    this.#snapshot();
  }

  #snapshot(): void {
    for (const kind of TRACKED) {
      for (const [id, value] of this.#store[kind] as Map<string, unknown>) this.#seen.set(id, JSON.stringify(value));
    }
  }

  /**
   * Events for what changed since the last call, appended to the store's outbox. `touched`: the
   * objects a request was handed (EmulatorStore.takeTouched); only those are compared, so the cost
   * follows the request, not the number of objects. Without it every object is compared.
   */
  record(requestId: string | null, idempotencyKey: string | null, touched?: Touched): StripeEvent[] {
    const store = this.#store;
    const events: StripeEvent[] = [];
    const push = (type: string, object: object, previous?: Obj) => {
      events.push({
        id: store.newId("evt"),
        object: "event",
        api_version: EVENT_API_VERSION,
        created: store.nowSeconds(),
        data: { object: structuredClone(object), ...(previous ? { previous_attributes: previous } : {}) },
        livemode: false,
        pending_webhooks: 1,
        request: { id: requestId, idempotency_key: idempotencyKey },
        type,
      });
    };
    const failed = new Set(store.failedPayments);
    store.failedPayments = [];
    const gone: string[] = [];
    for (const kind of TRACKED) {
      const map = store[kind] as unknown as TrackedMap<Obj>;
      const ids = touched ? new Set(kind === "invoices" ? [...touched[kind], ...failed] : touched[kind]) : map.keys();
      for (const id of ids) {
        const value = map.peek(id);
        if (value === undefined) {
          if (this.#seen.has(id)) gone.push(id);
          continue;
        }
        const json = JSON.stringify(value);
        const old = this.#seen.get(id);
        if (old === json && !failed.has(id)) continue;
        this.#seen.set(id, json);
        const before = old === undefined ? undefined : (JSON.parse(old) as Obj);
        if (old !== json) {
          for (const type of typesFor(kind, before, value)) {
            push(type, value, before && type.endsWith(".updated") ? previousAttributes(before, value) : undefined);
          }
        }
        if (kind === "invoices" && failed.has(id)) push("invoice.payment_failed", value);
      }
    }
    const deleted = touched ? gone : [...this.#seen.keys()];
    for (const id of deleted) {
      const json = this.#seen.get(id);
      if (json === undefined) continue;
      if (id.startsWith("cus_") && !store.customers.has(id)) {
        this.#seen.delete(id);
        push("customer.deleted", { id, object: "customer", deleted: true });
      }
      if (id.startsWith("in_") && !store.invoices.has(id)) {
        this.#seen.delete(id);
        push("invoice.deleted", JSON.parse(json) as object);
      }
    }
    const now = store.nowMs();
    for (const event of events) store.outbox.push({ event, attempts: 0, nextAttemptAt: now });
    return events;
  }
}

/** `Stripe-Signature: t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<body>">` (https://docs.stripe.com/webhooks#verify-manually). */
export const signPayload = (payload: string, secret: string, timestamp: number): string =>
  `t=${timestamp},v1=${createHmac("sha256", secret).update(`${timestamp}.${payload}`).digest("hex")}`;

/** A new `whsec_` secret. */
export const newWebhookSecret = (): string => `whsec_${randomToken(32)}`;

/** Retry delay after `attempts` failures: 0.5 s doubling up to 1 hour (Stripe retries for 3 days). */
export const retryDelayMs = (attempts: number): number => Math.min(500 * 2 ** Math.max(0, attempts - 1), 3_600_000);
/** Events older than this are dropped undelivered, like Stripe's. */
const GIVE_UP_MS = 3 * 24 * 3_600_000;
const TIMEOUT_MS = 10_000;

/**
 * Delivers the outbox in order, one event at a time; a failure (network error, non-2xx, timeout)
 * leaves the event at the head and retries it with backoff.
 */
export class WebhookSender {
  readonly #store: EmulatorStore;
  readonly #persist: () => void;
  #endpoint: WebhookEndpoint | undefined;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #closed = false;
  #abort = new AbortController();

  constructor(store: EmulatorStore, persist: () => void) {
    this.#store = store;
    this.#persist = persist;
  }

  setEndpoint(endpoint: WebhookEndpoint | undefined): void {
    this.#endpoint = endpoint;
    this.kick();
  }

  /** Starts a delivery pass unless one is running or waiting. */
  kick(): void {
    if (this.#closed || !this.#endpoint || this.#running) return;
    if (this.#timer) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    this.#running = this.#drain().finally(() => {
      this.#running = undefined;
    });
  }

  async #drain(): Promise<void> {
    const store = this.#store;
    while (!this.#closed && this.#endpoint) {
      const head = store.outbox[0];
      if (!head) return;
      const now = store.nowMs();
      if (now - head.event.created * 1000 > GIVE_UP_MS) {
        store.outbox.shift();
        this.#persist();
        continue;
      }
      if (head.nextAttemptAt > now) {
        this.#timer = setTimeout(() => {
          this.#timer = undefined;
          this.kick();
        }, head.nextAttemptAt - now);
        this.#timer.unref();
        return;
      }
      const ok = await this.#send(this.#endpoint, head.event);
      if (this.#closed) return;
      if (ok) {
        const index = store.outbox.indexOf(head);
        if (index >= 0) store.outbox.splice(index, 1);
      } else {
        head.attempts += 1;
        head.nextAttemptAt = store.nowMs() + retryDelayMs(head.attempts);
      }
      this.#persist();
    }
  }

  async #send(endpoint: WebhookEndpoint, event: StripeEvent): Promise<boolean> {
    const payload = JSON.stringify(event, null, 2);
    const signature = signPayload(payload, endpoint.secret, Math.floor(this.#store.nowMs() / 1000));
    try {
      const res = await fetch(endpoint.url, {
        method: "POST",
        headers: {
          "content-type": "application/json; charset=utf-8",
          "stripe-signature": signature,
          "user-agent": "Stripe/1.0 (+https://stripe.com/docs/webhooks)",
        },
        body: payload,
        redirect: "manual",
        signal: AbortSignal.any([this.#abort.signal, AbortSignal.timeout(TIMEOUT_MS)]),
      });
      await res.arrayBuffer().catch(() => undefined);
      return res.status >= 200 && res.status < 300;
    } catch {
      return false;
    }
  }

  /** Resolves once nothing is left to deliver right now (tests). */
  async idle(): Promise<void> {
    while (this.#running) await this.#running;
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#abort.abort();
    await this.#running?.catch(() => undefined);
  }
}
