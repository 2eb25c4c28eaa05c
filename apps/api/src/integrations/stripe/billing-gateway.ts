import { createHash } from "node:crypto";
import type Stripe from "stripe";
import { callStripe } from "./stripe-errors.ts";

export interface CustomerInput {
  name: string;
  email: string;
  address: { city?: string; country?: string; line1?: string; line2?: string; postal_code?: string; state?: string };
  organizationId: string;
}

export interface CustomerSnapshot {
  id: string;
  /** Minor units; positive is owed, negative is credit (Stripe's convention). */
  balance: number;
}

/** The customer side of the payment processor, as the account feature needs it. */
export interface CustomerGateway {
  createCustomer(input: CustomerInput): Promise<CustomerSnapshot>;
  updateCustomer(customerId: string, input: Partial<CustomerInput>): Promise<CustomerSnapshot>;
  /** Removes a customer this system made and never stored (a create that lost a race). */
  deleteCustomer(customerId: string): Promise<void>;
  /** Customers this system made (they carry their organization's id), created before `before`. */
  listOwnCustomers(before: Date): Promise<Array<{ id: string; organizationId: string }>>;
}

/** Same organization and same details -> same key: a retried create never makes a second customer. */
const createKey = (input: CustomerInput): string =>
  `customer-create:${input.organizationId}:${createHash("sha256")
    .update(JSON.stringify([input.name, input.email, input.address]))
    .digest("hex")
    .slice(0, 32)}`;

export const createCustomerGateway = (stripe: Stripe): CustomerGateway => ({
  createCustomer: (input) =>
    callStripe(async () => {
      const customer = await stripe.customers.create(
        {
          name: input.name,
          email: input.email,
          address: { country: input.address.country ?? null } as Stripe.AddressParam,
          metadata: { organization_id: input.organizationId },
        },
        { idempotencyKey: createKey(input) },
      );
      return { id: customer.id, balance: customer.balance ?? 0 };
    }),
  updateCustomer: (customerId, input) =>
    callStripe(async () => {
      const params: Stripe.CustomerUpdateParams = {};
      if (input.name !== undefined) params.name = input.name;
      if (input.email !== undefined) params.email = input.email;
      if (input.address !== undefined) params.address = input.address as Stripe.AddressParam;
      // A fresh key per logical update: replaying an old key could silently skip a real change.
      const customer = await stripe.customers.update(customerId, params, {
        idempotencyKey: `customer-update:${customerId}:${crypto.randomUUID()}`,
      });
      return { id: customer.id, balance: customer.balance ?? 0 };
    }),
  deleteCustomer: (customerId) =>
    callStripe(async () => {
      await stripe.customers.del(customerId, undefined, { idempotencyKey: `customer-delete:${customerId}` });
    }),
  listOwnCustomers: (before) =>
    callStripe(async () => {
      const found: Array<{ id: string; organizationId: string }> = [];
      const until = Math.floor(before.getTime() / 1000);
      for await (const customer of stripe.customers.list({ limit: 100, created: { lt: until } })) {
        const organizationId = customer.metadata?.organization_id;
        // Stripe filters by `created`; checked here too, for processors that ignore the filter.
        if (organizationId && customer.created < until) found.push({ id: customer.id, organizationId });
      }
      return found;
    }),
});
