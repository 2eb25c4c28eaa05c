import type { BillingContext } from "@fleet/db";
import { AppError, isAppError } from "@fleet/shared";

/**
 * The subscription interface of docs/api.md "Initial state and workflow rules" 4 as enrollment calls it:
 * the check before creating a service, and the quantity sync after creating or removing one.
 * The payments feature's SubscriptionService implements it; wiring it is one line in start-api.ts.
 */
export interface ServiceClearance {
  /** Throws AppError("payment_required") (402) saying what is missing. */
  ensureClearance(organizationId: string): Promise<void>;
  /** Brings the billing root's subscription quantity to the number of routers it pays for. */
  syncQuantity(organizationId: string): Promise<void>;
}

export interface AccountClearanceDeps {
  accounts: { billingContext(organizationId: string): Promise<BillingContext | null> };
  /** AccountService.requireAccount: throws the no-account error when the organization has none. */
  requireAccount(organizationId: string): Promise<unknown>;
}

/**
 * The default clearance until subscriptions are wired: the organization's billing root must have
 * a billing account. No quantity to sync without subscriptions.
 */
export class AccountClearance implements ServiceClearance {
  readonly #deps: AccountClearanceDeps;
  constructor(deps: AccountClearanceDeps) {
    this.#deps = deps;
  }

  async ensureClearance(organizationId: string): Promise<void> {
    const context = await this.#deps.accounts.billingContext(organizationId);
    if (!context) throw new AppError("unauthenticated", "The organization named by the access token does not exist.");
    try {
      await this.#deps.requireAccount(context.rootOrganizationId);
    } catch (error) {
      if (!isAppError(error) || error.code !== "no_account") throw error;
      const own = context.rootOrganizationId === organizationId;
      throw new AppError(
        "payment_required",
        own
          ? "Enrolling a router needs a billing account, and this organization has none. Create one with POST /v1/account, then try again."
          : `Enrolling a router needs a billing account at the top of this organization tree, and "${context.rootOrganizationName}" has none. Its owner must create one with POST /v1/account.`,
        { extra: { billing_organization_id: context.rootOrganizationId } },
      );
    }
  }

  async syncQuantity(_organizationId: string): Promise<void> {}
}
