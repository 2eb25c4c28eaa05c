import { defineEntity, type InferEntity, p } from "@mikro-orm/core";
import { BillingAccount } from "./billing-account.entity.ts";

/**
 * The processor subscription that bills an account's managed routers (one per billing account).
 * `quantity` is what the processor was last told; the router count is the truth it converges to.
 */
export const BillingSubscription = defineEntity({
  name: "BillingSubscription",
  tableName: "billing_subscriptions",
  properties: {
    id: p.uuid().primary(),
    account: () => p.manyToOne(BillingAccount).unique().deleteRule("cascade"),
    stripeSubscriptionId: p.string().length(255).unique(),
    stripeItemId: p.string().length(255),
    currency: p.string().length(3),
    quantity: p.integer(),
    /** The processor's status (active, past_due, incomplete, unpaid, canceled, ...), from its events. */
    status: p.string().length(32).default("active"),
    /** `created` of the event that set `status`: an older event never overwrites a newer one. */
    statusAt: p.datetime().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p
      .datetime()
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
  },
});
export type TBillingSubscription = InferEntity<typeof BillingSubscription>;
