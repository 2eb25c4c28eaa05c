import { isUuid } from "@fleet/shared";
import type { Database } from "../database.ts";
import { BillingAccount, type TBillingAccount } from "../entities/billing-account.entity.ts";
import { isUniqueViolation, toDate, toNumber } from "./sql-values.ts";

export interface AccountRecord {
  id: string;
  organizationId: string;
  name: string;
  email: string;
  currency: string;
  balanceMinor: number;
  address: {
    city: string;
    country: string;
    line1: string;
    line2: string;
    postalCode: string;
    state: string;
  };
  stripeCustomerId: string;
  createdAt: Date;
}

/** Where an organization's bill goes: the top of its tree, and that root's account if any. */
export interface BillingContext {
  organizationId: string;
  rootOrganizationId: string;
  rootOrganizationName: string;
  account: AccountRecord | null;
}

export interface NewAccount {
  organizationId: string;
  name: string;
  email: string;
  country: string;
  stripeCustomerId: string;
  balanceMinor: number;
}

export interface AccountPatch {
  name?: string;
  email?: string;
  currency?: string;
  balanceMinor?: number;
  address?: Partial<AccountRecord["address"]>;
}

// The common case in one cheap statement: an organization at the top of its tree with its own
// account. Everything else (children, no account yet, unknown ids) takes the recursive query.
const OWN_ACCOUNT_SQL = `
select o.name as root_name, a.id, a.name, a.email, a.currency, a.balance_minor, a.address_city, a.address_country,
  a.address_line1, a.address_line2, a.address_postal_code, a.address_state, a.stripe_customer_id,
  (extract(epoch from a.created_at) * 1000)::float8 as created_ms
from billing_accounts a join organizations o on o.id = a.organization_id
where a.organization_id = ? and o.parent_id is null`;

// Depth cap guards against a cycle someone writes by hand; real trees are a few levels deep.
const BILLING_CONTEXT_SQL = `
with recursive chain (id, parent_id, name, depth) as (
  select id, parent_id, name, 0 from organizations where id = ?
  union all
  select o.id, o.parent_id, o.name, c.depth + 1
  from organizations o join chain c on o.id = c.parent_id
  where c.depth < 32
)
select c.id as root_id, c.name as root_name,
  a.id, a.name, a.email, a.currency, a.balance_minor, a.address_city, a.address_country,
  a.address_line1, a.address_line2, a.address_postal_code, a.address_state, a.stripe_customer_id,
  (extract(epoch from a.created_at) * 1000)::float8 as created_ms
from chain c
left join billing_accounts a on a.organization_id = c.id
where c.parent_id is null
limit 1`;

type AccountRow = Record<string, unknown>;

const fromRow = (organizationId: string, row: AccountRow): AccountRecord => ({
  id: String(row.id),
  organizationId,
  name: String(row.name),
  email: String(row.email),
  currency: String(row.currency),
  balanceMinor: toNumber(row.balance_minor),
  address: {
    city: String(row.address_city),
    country: String(row.address_country),
    line1: String(row.address_line1),
    line2: String(row.address_line2),
    postalCode: String(row.address_postal_code),
    state: String(row.address_state),
  },
  stripeCustomerId: String(row.stripe_customer_id),
  createdAt: toDate(row.created_ms),
});

const fromEntity = (e: TBillingAccount): AccountRecord => ({
  id: e.id,
  organizationId: typeof e.organization === "string" ? e.organization : e.organization.id,
  name: e.name,
  email: e.email,
  currency: e.currency,
  balanceMinor: e.balanceMinor,
  address: {
    city: e.addressCity,
    country: e.addressCountry,
    line1: e.addressLine1,
    line2: e.addressLine2,
    postalCode: e.addressPostalCode,
    state: e.addressState,
  },
  stripeCustomerId: e.stripeCustomerId,
  createdAt: e.createdAt,
});

export class AccountsRepository {
  readonly #db: Database;
  constructor(db: Database) {
    this.#db = db;
  }

  /** One statement: the organization's billing root and the root's account. Null: unknown org. */
  async billingContext(organizationId: string): Promise<BillingContext | null> {
    if (!isUuid(organizationId)) return null;
    const own = (await this.#db.query<AccountRow>(OWN_ACCOUNT_SQL, [organizationId], { prepare: "account_own" }))[0];
    if (own) {
      return {
        organizationId,
        rootOrganizationId: organizationId,
        rootOrganizationName: String(own.root_name),
        account: fromRow(organizationId, own),
      };
    }
    const rows = await this.#db.query<AccountRow>(BILLING_CONTEXT_SQL, [organizationId], {
      prepare: "account_context",
    });
    const row = rows[0];
    if (!row) return null;
    const rootId = String(row.root_id);
    return {
      organizationId,
      rootOrganizationId: rootId,
      rootOrganizationName: String(row.root_name),
      account: row.id === null || row.id === undefined ? null : fromRow(rootId, row),
    };
  }

  /** Inserts the account; returns null when the organization already has one (a lost race). */
  async insert(input: NewAccount): Promise<AccountRecord | null> {
    const em = this.#db.em();
    const entity = em.create(BillingAccount, {
      id: crypto.randomUUID(),
      organization: input.organizationId,
      name: input.name,
      email: input.email,
      addressCountry: input.country,
      stripeCustomerId: input.stripeCustomerId,
      balanceMinor: input.balanceMinor,
    });
    try {
      await em.flush();
    } catch (error) {
      if (isUniqueViolation(error)) return null;
      throw error;
    }
    return fromEntity(entity);
  }

  async update(accountId: string, patch: AccountPatch): Promise<AccountRecord> {
    const em = this.#db.em();
    const entity = await em.findOneOrFail(BillingAccount, { id: accountId });
    if (patch.name !== undefined) entity.name = patch.name;
    if (patch.email !== undefined) entity.email = patch.email;
    if (patch.currency !== undefined) entity.currency = patch.currency;
    if (patch.balanceMinor !== undefined) entity.balanceMinor = patch.balanceMinor;
    const a = patch.address;
    if (a?.city !== undefined) entity.addressCity = a.city;
    if (a?.country !== undefined) entity.addressCountry = a.country;
    if (a?.line1 !== undefined) entity.addressLine1 = a.line1;
    if (a?.line2 !== undefined) entity.addressLine2 = a.line2;
    if (a?.postalCode !== undefined) entity.addressPostalCode = a.postalCode;
    if (a?.state !== undefined) entity.addressState = a.state;
    await em.flush();
    return fromEntity(entity);
  }
}
