import type { AccountPatch, AccountRecord, AccountsRepository, BillingContext } from "@fleet/db";
import {
  AppError,
  noAccountError,
  type TAccount,
  type TCreateAccountInput,
  type TUpdateAccountInput,
} from "@fleet/shared";
import type { Logger } from "pino";
import type { AuthClaims } from "../auth/token-verifier.ts";
import type { CustomerGateway } from "../../integrations/stripe/billing-gateway.ts";
import { toAccountResponse } from "./account.mapper.ts";

export interface AccountServiceDeps {
  accounts: AccountsRepository;
  customers: CustomerGateway;
  docsUrl: string;
  /** Where a failed compensation is reported (the only case that needs a human). */
  logger?: Logger;
}

/**
 * How old a processor customer without an account must be before it is removed: the processor
 * keeps idempotency keys 24 hours, and within them an identical retry of the create reuses the
 * customer (it must still exist then).
 */
export const ORPHAN_CUSTOMER_GRACE_MS = 25 * 3_600_000;

/** The billing account of the token's organization (docs/api.md "Account"). */
export class AccountService {
  readonly #deps: AccountServiceDeps;
  constructor(deps: AccountServiceDeps) {
    this.#deps = deps;
  }

  async get(auth: AuthClaims): Promise<TAccount> {
    // `requireAccount`'s checks on the statement's answer, without its two async steps.
    const context = await this.#deps.accounts.billingContext(auth.organizationId);
    return toAccountResponse(this.#accountOf(this.#own(this.#known(context), auth.organizationId)), auth.timezone);
  }

  async create(auth: AuthClaims, input: TCreateAccountInput): Promise<TAccount> {
    const context = await this.#ownContext(auth.organizationId);
    if (context.account) {
      throw new AppError(
        "conflict",
        "This organization already has a billing account; change it with PATCH /v1/account.",
      );
    }
    const customer = await this.#deps.customers.createCustomer({
      name: input.name,
      email: input.email,
      address: { country: input.address.country },
      organizationId: auth.organizationId,
    });
    const account = await this.#deps.accounts.insert({
      organizationId: auth.organizationId,
      name: input.name,
      email: input.email,
      country: input.address.country,
      stripeCustomerId: customer.id,
      balanceMinor: customer.balance,
    });
    if (!account) {
      // Another create of this organization won between the check and the insert (with other
      // details, so another idempotency key): the customer made here belongs to nothing.
      await this.#deps.customers
        .deleteCustomer(customer.id)
        .catch((error: unknown) =>
          this.#deps.logger?.error(
            { err: error, customerId: customer.id, organizationId: auth.organizationId },
            "could not delete the processor customer of a create that lost the race; delete it by hand",
          ),
        );
      throw new AppError(
        "conflict",
        "This organization already has a billing account; change it with PATCH /v1/account.",
      );
    }
    return toAccountResponse(account, auth.timezone);
  }

  /**
   * The scheduled reconciliation of processor customers (docs/billing.md "Reconciliation"): a
   * create that stopped between the processor's customer and the account insert (a crash, a
   * database outage) left a customer that belongs to nothing. Customers this system made, older
   * than the grace, that no account holds (their organization still existing) are removed.
   */
  async removeOrphanCustomers(now: Date): Promise<{ checked: number; removed: string[] }> {
    const own = await this.#deps.customers.listOwnCustomers(new Date(now.getTime() - ORPHAN_CUSTOMER_GRACE_MS));
    const orphans = await this.#deps.accounts.unclaimedCustomers(
      own.map((c) => ({ customerId: c.id, organizationId: c.organizationId })),
    );
    const removed: string[] = [];
    for (const customerId of orphans) {
      try {
        await this.#deps.customers.deleteCustomer(customerId);
        removed.push(customerId);
      } catch (error) {
        this.#deps.logger?.warn({ err: error, customerId }, "orphan processor customer not removed; next run retries");
      }
    }
    return { checked: own.length, removed };
  }

  /** Only supplied fields change; an empty string unsets an optional one (docs/api.md "Update rules"). */
  async update(auth: AuthClaims, input: TUpdateAccountInput): Promise<TAccount> {
    const current = await this.requireAccount(auth.organizationId);
    const patch: AccountPatch = {};
    if (input.name !== undefined && input.name !== current.name) patch.name = input.name;
    if (input.email !== undefined && input.email !== current.email) patch.email = input.email;
    const address: NonNullable<AccountPatch["address"]> = {};
    const a = input.address;
    if (a?.city !== undefined && a.city !== current.address.city) address.city = a.city;
    if (a?.country !== undefined && a.country !== current.address.country) address.country = a.country;
    if (a?.line1 !== undefined && a.line1 !== current.address.line1) address.line1 = a.line1;
    if (a?.line2 !== undefined && a.line2 !== current.address.line2) address.line2 = a.line2;
    if (a?.postal_code !== undefined && a.postal_code !== current.address.postalCode)
      address.postalCode = a.postal_code;
    if (a?.state !== undefined && a.state !== current.address.state) address.state = a.state;
    if (Object.keys(address).length > 0) patch.address = address;
    if (Object.keys(patch).length === 0) return toAccountResponse(current, auth.timezone);

    const merged = { ...current.address, ...address };
    // The changed fields only, with the given values (the new ones, or the old ones to revert).
    const customerFields = (name: string, email: string, mergedAddress: typeof current.address) => ({
      ...(patch.name !== undefined ? { name } : {}),
      ...(patch.email !== undefined ? { email } : {}),
      ...(patch.address
        ? {
            address: {
              city: mergedAddress.city,
              country: mergedAddress.country,
              line1: mergedAddress.line1,
              line2: mergedAddress.line2,
              postal_code: mergedAddress.postalCode,
              state: mergedAddress.state,
            },
          }
        : {}),
    });
    // Order with compensation (docs/api.md "Account"): the input is fully validated before this
    // point; the processor goes first, so if it refuses nothing here has changed. If the database
    // write then fails, the processor customer is put back to the values it had, so the two never
    // disagree. (A database transaction held open across the processor call would pin a
    // connection, and the only one with embedded PGlite, for as long as the processor takes.)
    const customer = await this.#deps.customers.updateCustomer(
      current.stripeCustomerId,
      customerFields(patch.name ?? current.name, patch.email ?? current.email, merged),
    );
    let updated: AccountRecord;
    try {
      updated = await this.#deps.accounts.update(current.id, { ...patch, balanceMinor: customer.balance });
    } catch (error) {
      await this.#deps.customers
        .updateCustomer(current.stripeCustomerId, customerFields(current.name, current.email, current.address))
        .catch((revertError: unknown) => {
          this.#deps.logger?.error(
            { err: revertError, accountId: current.id, customerId: current.stripeCustomerId },
            "account update failed and the processor customer could not be reverted: reconcile by hand",
          );
        });
      throw error;
    }
    return toAccountResponse(updated, auth.timezone);
  }

  /**
   * The account that pays for this organization's services. Other features (payments, routers)
   * call this, so the no-account and billed-by-parent answers are the same everywhere.
   */
  async requireAccount(organizationId: string): Promise<AccountRecord> {
    return this.#accountOf(await this.#ownContext(organizationId));
  }

  #accountOf(context: BillingContext): AccountRecord {
    if (!context.account) throw noAccountError(this.#deps.docsUrl);
    return context.account;
  }

  async #ownContext(organizationId: string): Promise<BillingContext> {
    return this.#own(this.#known(await this.#deps.accounts.billingContext(organizationId)), organizationId);
  }

  /** The context of an organization at the top of its tree; a child's bill goes to its root. */
  #own(context: BillingContext, organizationId: string): BillingContext {
    if (context.rootOrganizationId !== organizationId) {
      throw new AppError(
        "billed_by_parent",
        `This organization is billed by the top of its organization tree, "${context.rootOrganizationName}" (${context.rootOrganizationId}); its billing account is managed there.`,
        { extra: { billing_organization_id: context.rootOrganizationId } },
      );
    }
    return context;
  }

  #known(context: BillingContext | null): BillingContext {
    if (!context) {
      throw new AppError("unauthenticated", "The organization named by the access token does not exist.");
    }
    return context;
  }
}
