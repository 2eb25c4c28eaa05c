import { isUuid } from "@fleet/shared";
import { sql } from "kysely";
import { compiledStatement } from "../compiled-statement.ts";
import type { Database, Query, Row } from "../database.ts";
import { isUniqueViolation, toNumber } from "./sql-values.ts";

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

const ACCOUNT_COLUMNS = [
  "id",
  "organization_id",
  "name",
  "email",
  "currency",
  "balance_minor",
  "address_city",
  "address_country",
  "address_line1",
  "address_line2",
  "address_postal_code",
  "address_state",
  "stripe_customer_id",
  "created_at",
] as const;

type AccountRow = Pick<Row<"billing_accounts">, (typeof ACCOUNT_COLUMNS)[number]>;

const fromRow = (row: AccountRow): AccountRecord => ({
  id: row.id,
  organizationId: row.organization_id,
  name: row.name,
  email: row.email,
  currency: row.currency,
  // bigint: the drivers hand it over as text.
  balanceMinor: toNumber(row.balance_minor),
  address: {
    city: row.address_city,
    country: row.address_country,
    line1: row.address_line1,
    line2: row.address_line2,
    postalCode: row.address_postal_code,
    state: row.address_state,
  },
  stripeCustomerId: row.stripe_customer_id,
  createdAt: row.created_at,
});

const selectAccounts = (query: Query) =>
  query.kysely
    .selectFrom("billing_accounts")
    .select(ACCOUNT_COLUMNS.map((column) => `billing_accounts.${column}` as const));

/**
 * The common case in one cheap statement: an organization at the top of its tree with its own
 * account. Every request of the account endpoints makes it, so it is compiled once.
 */
const ownAccount = compiledStatement((kysely, organizationId: string) =>
  kysely
    .selectFrom("billing_accounts")
    .select(ACCOUNT_COLUMNS.map((column) => `billing_accounts.${column}` as const))
    .innerJoin("organizations as o", "o.id", "billing_accounts.organization_id")
    .select("o.name as root_name")
    .where("billing_accounts.organization_id", "=", organizationId)
    .where("o.parent_id", "is", null),
);

export class AccountsRepository {
  readonly #db: Database;
  constructor(db: Database) {
    this.#db = db;
  }

  /** The organization's billing root and the root's account. Null: unknown org. */
  async billingContext(organizationId: string): Promise<BillingContext | null> {
    if (!isUuid(organizationId)) return null;
    // Everything but the common case (children, no account yet, unknown ids) walks up the tree.
    const [own] = await ownAccount(this.#db.query, organizationId);
    if (own) {
      return {
        organizationId,
        rootOrganizationId: organizationId,
        rootOrganizationName: own.root_name,
        account: fromRow(own),
      };
    }
    const root = await this.#db.query.kysely
      .withRecursive("chain(id, parent_id, name, depth)", (db) =>
        db
          .selectFrom("organizations")
          .select(["id", "parent_id", "name", sql<number>`0`.as("depth")])
          .where("id", "=", organizationId)
          .unionAll((qb) =>
            qb
              .selectFrom("organizations as o")
              .innerJoin("chain as c", "o.id", "c.parent_id")
              .select(["o.id", "o.parent_id", "o.name", (eb) => eb("c.depth", "+", 1).as("depth")])
              // Depth cap guards against a cycle someone writes by hand; real trees are a few levels deep.
              .where("c.depth", "<", 32),
          ),
      )
      .selectFrom("chain as c")
      .select(["c.id", "c.name"])
      .where("c.parent_id", "is", null)
      .limit(1)
      .executeTakeFirst();
    if (!root) return null;
    const account = await selectAccounts(this.#db.query)
      .where("billing_accounts.organization_id", "=", root.id)
      .executeTakeFirst();
    return {
      organizationId,
      rootOrganizationId: root.id,
      rootOrganizationName: root.name,
      account: account ? fromRow(account) : null,
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
    // Raw: the candidates come in as arrays through unnest.
    const { rows } = await sql<{ customer_id: string }>`
      select c.customer_id from unnest(${candidates.map((c) => c.customerId)}::text[],
        ${candidates.map((c) => c.organizationId)}::text[]) as c(customer_id, organization_id)
      join organizations o on o.id::text = c.organization_id
      where not exists (select 1 from billing_accounts a where a.stripe_customer_id = c.customer_id)`.execute(
      this.#db.query.kysely,
    );
    return rows.map((r) => r.customer_id);
  }

  /** Inserts the account; returns null when the organization already has one (a lost race). */
  async insert(input: NewAccount): Promise<AccountRecord | null> {
    try {
      const row = await this.#db.query.kysely
        .insertInto("billing_accounts")
        .values({
          id: crypto.randomUUID(),
          organization_id: input.organizationId,
          name: input.name,
          email: input.email,
          address_country: input.country,
          stripe_customer_id: input.stripeCustomerId,
          balance_minor: input.balanceMinor,
          created_at: sql<Date>`now()`,
          updated_at: sql<Date>`now()`,
        })
        .returning(ACCOUNT_COLUMNS)
        .executeTakeFirstOrThrow();
      return fromRow(row);
    } catch (error) {
      if (isUniqueViolation(error)) return null;
      throw error;
    }
  }

  /** Changes the supplied fields only (docs/api.md "Update rules"); throws for an unknown id. */
  async update(accountId: string, patch: AccountPatch): Promise<AccountRecord> {
    const sets = {
      name: patch.name,
      email: patch.email,
      currency: patch.currency,
      balance_minor: patch.balanceMinor,
      address_city: patch.address?.city,
      address_country: patch.address?.country,
      address_line1: patch.address?.line1,
      address_line2: patch.address?.line2,
      address_postal_code: patch.address?.postalCode,
      address_state: patch.address?.state,
    };
    const changes = Object.values(sets).some((value) => value !== undefined);
    // Kysely leaves out the columns whose value is undefined.
    const row = changes
      ? await this.#db.query.kysely
          .updateTable("billing_accounts")
          .set({ ...sets, updated_at: sql<Date>`now()` })
          .where("id", "=", accountId)
          .returning(ACCOUNT_COLUMNS)
          .executeTakeFirst()
      : await selectAccounts(this.#db.query).where("billing_accounts.id", "=", accountId).executeTakeFirst();
    if (!row) throw new Error(`billing account ${accountId} not found`);
    return fromRow(row);
  }
}
