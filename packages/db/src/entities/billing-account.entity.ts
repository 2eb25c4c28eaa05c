import { defineEntity, type InferEntity, p } from "@mikro-orm/core";
import { Organization } from "./organization.entity.ts";

/**
 * The billing account of an organization (docs/api.md "Account"). Card data never lives here; the
 * processor's customer id links to it. `balanceMinor` mirrors the processor's customer balance in
 * minor units so reads never wait on the processor.
 */
export const BillingAccount = defineEntity({
  name: "BillingAccount",
  tableName: "billing_accounts",
  properties: {
    id: p.uuid().primary(),
    organization: () => p.manyToOne(Organization).unique().deleteRule("cascade"),
    name: p.string().length(100),
    email: p.string().length(250),
    currency: p.string().length(3).default(""),
    balanceMinor: p.bigint("number").default(0),
    addressCity: p.string().length(50).default(""),
    addressCountry: p.string().length(2),
    addressLine1: p.string().length(100).default(""),
    addressLine2: p.string().length(100).default(""),
    addressPostalCode: p.string().length(10).default(""),
    addressState: p.string().length(50).default(""),
    stripeCustomerId: p.string().length(255).unique(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p
      .datetime()
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
  },
});
export type TBillingAccount = InferEntity<typeof BillingAccount>;
