import type { BillingMirrorRepository } from "@fleet/db";
import type { WebhookVerifier } from "../../integrations/stripe/webhook-verifier.ts";
import { applyStripeEvent, type EventOutcome } from "./apply-stripe-event.ts";

export interface StripeWebhookServiceDeps {
  verify: WebhookVerifier;
  mirror: Pick<BillingMirrorRepository, "transaction">;
  now: () => Date;
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
    const event = this.#deps.verify(rawBody, signature);
    const at = this.#deps.now();
    const outcome = await this.#deps.mirror.transaction((writer) => applyStripeEvent(writer, event, at));
    return { id: event.id, outcome };
  }
}
