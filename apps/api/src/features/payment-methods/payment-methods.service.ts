import type { AccountRecord } from "@fleet/db";
import { AppError, type TPaymentMethod, type TSetupIntent } from "@fleet/shared";
import type { CardSnapshot, PaymentsGateway } from "../../integrations/stripe/payments-gateway.ts";
import type { AuthClaims } from "../auth/token-verifier.ts";
import type { BillingMirrorService } from "../subscriptions/billing-mirror.service.ts";
import { toPaymentMethodResponse, toSetupIntentResponse } from "./payment-methods.mapper.ts";

/** The billing account of an organization, or the no-account / billed-by-parent error. */
export interface AccountRequirement {
  requireAccount(organizationId: string): Promise<AccountRecord>;
}

export interface PaymentMethodsServiceDeps {
  accounts: AccountRequirement;
  payments: PaymentsGateway;
  /** Handed to clients with every setup intent (docs/api.md "Setup Intent"). */
  publishableKey: string;
  /** The billing mirror (docs/billing.md "Billing mirror"): lists answer from it; writes pass through it. */
  mirror: Pick<BillingMirrorService, "cards" | "cardSaved" | "cardRemoved">;
  /** Charges open invoices again and starts billing trial routers once a card is saved. */
  billing: { cardSaved(organizationId: string): Promise<void> };
  /** Failures after the card was saved (the retry of open invoices): logged, the save stands. */
  onError: (error: unknown, context: string) => void;
}

const notFound = (id: string) => new AppError("not_found", `This account has no payment method with id "${id}".`);

/**
 * Cards are saved through the processor's client-side flow (docs/api.md "Payment methods"). Writes go
 * to the processor first (down: 502, nothing changed), then into the local mirror, which the list
 * answers from (docs/billing.md "Billing mirror").
 */
export class PaymentMethodsService {
  readonly #deps: PaymentMethodsServiceDeps;
  constructor(deps: PaymentMethodsServiceDeps) {
    this.#deps = deps;
  }

  async createSetupIntent(auth: AuthClaims): Promise<TSetupIntent> {
    const account = await this.#deps.accounts.requireAccount(auth.organizationId);
    const intent = await this.#deps.payments.createSetupIntent(account.stripeCustomerId);
    return toSetupIntentResponse(intent, this.#deps.publishableKey, auth.timezone);
  }

  /**
   * Attaches the card to the account's customer and makes it the default; a card already attached
   * only becomes the default. A card of another customer is answered like an unknown one.
   */
  async save(auth: AuthClaims, paymentMethodId: string): Promise<TPaymentMethod> {
    const account = await this.#deps.accounts.requireAccount(auth.organizationId);
    const customerId = account.stripeCustomerId;
    const found = await this.#deps.payments.findPaymentMethod(paymentMethodId);
    if (!found || (found.customerId !== null && found.customerId !== customerId)) throw notFound(paymentMethodId);
    if (found.type !== "card") {
      throw new AppError("validation_failed", "The given data was invalid: id must be a card payment method.", {
        fields: { id: ["must be a card payment method"] },
      });
    }
    const card =
      found.customerId === customerId ? found : await this.#deps.payments.attachPaymentMethod(found.id, customerId);
    await this.#deps.payments.setDefaultPaymentMethod(customerId, card.id);
    await this.#deps.mirror.cardSaved(account.id, card, true);
    try {
      await this.#deps.billing.cardSaved(auth.organizationId);
    } catch (error) {
      this.#deps.onError(
        error,
        "open invoices not retried after a card was saved; reconciliation or the next save does it",
      );
    }
    return toPaymentMethodResponse(card, auth.timezone);
  }

  async list(auth: AuthClaims): Promise<TPaymentMethod[]> {
    const account = await this.#deps.accounts.requireAccount(auth.organizationId);
    const cards = await this.#deps.mirror.cards(account);
    return cards.map((card) => toPaymentMethodResponse(card, auth.timezone));
  }

  /** docs/api.md: the default or only payment method cannot be deleted; another must become default first. */
  async delete(auth: AuthClaims, paymentMethodId: string): Promise<void> {
    const account = await this.#deps.accounts.requireAccount(auth.organizationId);
    const customerId = account.stripeCustomerId;
    const [cards, defaultId] = await Promise.all([
      this.#deps.payments.listCards(customerId),
      this.#deps.payments.defaultPaymentMethodId(customerId),
    ]);
    const card: CardSnapshot | undefined = cards.find((c) => c.id === paymentMethodId);
    if (!card) throw notFound(paymentMethodId);
    if (cards.length === 1) {
      throw new AppError(
        "conflict",
        "This is the only payment method of the account and cannot be deleted. Add another card (POST /v1/account/payment-methods), then delete this one.",
      );
    }
    if (card.id === defaultId) {
      throw new AppError(
        "conflict",
        "This is the default payment method and cannot be deleted. Make another card the default first by sending its id to POST /v1/account/payment-methods, then delete this one.",
      );
    }
    await this.#deps.payments.detachPaymentMethod(card.id);
    await this.#deps.mirror.cardRemoved(card.id);
  }
}
