import { INVOICE_LIST_LIMIT, type TInvoice } from "@fleet/shared";
import type { AuthClaims } from "../auth/token-verifier.ts";
import type { AccountRequirement } from "../payment-methods/payment-methods.service.ts";
import type { BillingMirrorService } from "../subscriptions/billing-mirror.service.ts";
import { toInvoiceResponse } from "./invoices.mapper.ts";

export interface InvoicesServiceDeps {
  accounts: AccountRequirement;
  /** The billing mirror: answers also while the processor is unreachable (docs/billing.md "Billing mirror"). */
  mirror: Pick<BillingMirrorService, "invoices">;
}

/** docs/api.md "Invoices": the selected organization's invoices, newest first, the most recent 100. */
export class InvoicesService {
  readonly #deps: InvoicesServiceDeps;
  constructor(deps: InvoicesServiceDeps) {
    this.#deps = deps;
  }

  async list(auth: AuthClaims): Promise<TInvoice[]> {
    const account = await this.#deps.accounts.requireAccount(auth.organizationId);
    const invoices = await this.#deps.mirror.invoices(account, INVOICE_LIST_LIMIT);
    // The mirror already lists newest first; sorting again (stable) keeps that a guarantee of ours.
    return invoices
      .slice(0, INVOICE_LIST_LIMIT)
      .sort((a, b) => b.created.getTime() - a.created.getTime())
      .map((invoice) => toInvoiceResponse(invoice, auth.timezone));
  }
}
