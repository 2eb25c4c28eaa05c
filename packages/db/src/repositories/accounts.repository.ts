import { isUuid } from "@fleet/shared";
import type { Database } from "../database.ts";
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
where a.organization_id = $1 and o.parent_id is null`;

// Depth cap guards against a cycle someone writes by hand; real trees are a few levels deep.
const BILLING_CONTEXT_SQL = `
with recursive chain (id, parent_id, name, depth) as (
  select id, parent_id, name, 0 from organizations where id = $1
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

/** The columns `fromRow` reads, for statements on `billing_accounts` alone. */
const ACCOUNT_COLUMNS = `id, organization_id, name, email, currency, balance_minor, address_city, address_country,
  address_line1, address_line2, address_postal_code, address_state, stripe_customer_id,
  (extract(epoch from created_at) * 1000)::float8 as created_ms`;

/** The columns a patch may set, in a fixed order, with the value each takes from the patch. */
const patchColumns = (p: AccountPatch): Array<[string, unknown]> => [
  ["name", p.name],
  ["email", p.email],
  ["currency", p.currency],
  ["balance_minor", p.balanceMinor],
  ["address_city", p.address?.city],
  ["address_country", p.address?.country],
  ["address_line1", p.address?.line1],
  ["address_line2", p.address?.line2],
  ["address_postal_code", p.address?.postalCode],
  ["address_state", p.address?.state],
];

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

  /**
   * Of these processor customers (made by this system for an organization), those no billing
   * account holds and whose organization still exists: a create stopped between the processor and
   * the insert left them behind.
   */
  async unclaimedCustomers(
    candidates: ReadonlyArray<{ customerId: string; organizationId: string }>,
  ): Promise<string[]> {
    if (candidates.length === 0) return [];
    const rows = await this.#db.query<{ customer_id: string }>(
      `select c.customer_id from unnest($1::text[], $2::text[]) as c(customer_id, organization_id)
       join organizations o on o.id::text = c.organization_id
       where not exists (select 1 from billing_accounts a where a.stripe_customer_id = c.customer_id)`,
      [candidates.map((c) => c.customerId), candidates.map((c) => c.organizationId)],
    );
    return rows.map((r) => String(r.customer_id));
  }

  /** Inserts the account; returns null when the organization already has one (a lost race). */
  async insert(input: NewAccount): Promise<AccountRecord | null> {
    try {
      const rows = await this.#db.query<AccountRow>(
        `insert into billing_accounts (id, organization_id, name, email, address_country, stripe_customer_id,
           balance_minor, created_at, updated_at)
         values ($1, $2, $3, $4, $5, $6, $7, now(), now())
         returning ${ACCOUNT_COLUMNS}`,
        [
          crypto.randomUUID(),
          input.organizationId,
          input.name,
          input.email,
          input.country,
          input.stripeCustomerId,
          input.balanceMinor,
        ],
      );
      return fromRow(input.organizationId, rows[0] as AccountRow);
    } catch (error) {
      if (isUniqueViolation(error)) return null;
      throw error;
    }
  }

  /** Changes the supplied fields only (docs/api.md "Update rules"); throws for an unknown id. */
  async update(accountId: string, patch: AccountPatch): Promise<AccountRecord> {
    const params: unknown[] = [accountId];
    const sets: string[] = [];
    for (const [column, value] of patchColumns(patch)) {
      if (value === undefined) continue;
      params.push(value);
      sets.push(`${column} = $${params.length}`);
    }
    const rows = await this.#db.query<AccountRow>(
      sets.length === 0
        ? `select ${ACCOUNT_COLUMNS} from billing_accounts where id = $1`
        : `update billing_accounts set ${sets.join(", ")}, updated_at = now() where id = $1 returning ${ACCOUNT_COLUMNS}`,
      params,
    );
    const row = rows[0];
    if (!row) throw new Error(`billing account ${accountId} not found`);
    return fromRow(String(row.organization_id), row);
  }
}
