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
