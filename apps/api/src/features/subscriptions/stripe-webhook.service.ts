import type { BillingMirror } from "./billing-mirror.ts";
import { AppError, type Clock } from "@fleet/shared";
import { checkStripeEvent } from "../../integrations/stripe/stripe-event.schema.ts";
import type { WebhookVerifier } from "../../integrations/stripe/webhook-verifier.ts";
import { applyStripeEvent, type EventOutcome } from "./apply-stripe-event.ts";

export interface StripeWebhookServiceDeps {
  verify: WebhookVerifier;
  mirror: Pick<BillingMirror, "transaction">;
  clock: Clock;
}

/**
 * `POST /v1/stripe/webhook` (docs/billing.md "Webhooks"): verified over the raw body before
 * anything is read; each event applied once, in one transaction with its event id.
 */
export class StripeWebhookService {
  readonly #deps: StripeWebhookServiceDeps;
  constructor(deps: StripeWebhookServiceDeps) {
    this.#deps = deps;
  }

  async receive(rawBody: Buffer, signature: string | undefined): Promise<{ id: string; outcome: EventOutcome }> {
    const verified: unknown = this.#deps.verify(rawBody, signature);
    // Signed is not well-formed: a body the system cannot read changes nothing and is a 400.
    const checked = checkStripeEvent(verified);
    if (!checked.ok) {
      throw new AppError("bad_request", `The event is not a well-formed Stripe event: ${checked.problem}.`);
    }
    const { event } = checked;
    // A type the system does not act on is acknowledged and not even recorded.
    if (!checked.handled) return { id: event.id, outcome: "ignored" };
    const at = this.#deps.clock.now();
    const outcome = await this.#deps.mirror.transaction((writer) => applyStripeEvent(writer, event, at));
    return { id: event.id, outcome };
  }
}
