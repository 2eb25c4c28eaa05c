import { isUuid } from "@fleet/shared";
import type { Query, Row } from "../database.ts";
import { toNumber } from "./sql-values.ts";

/** An API key as stored: never the key itself (docs/api.md "Authentication"). */
export interface ApiKeyRecord {
  id: string;
  organizationId: string;
  /** The team the key is bound to (its creator's token named it); null: the default team. */
  teamId: string | null;
  createdBy: string;
  name: string;
  prefix: string;
  scopes: string[];
  createdAt: Date;
  expiresAt: Date | null;
  lastUsedAt: Date | null;
}

export interface NewApiKey {
  organizationId: string;
  teamId?: string | null;
  createdBy: string;
  name: string;
  prefix: string;
  /** SHA-256 hex of the key. */
  keyHash: string;
  scopes: readonly string[];
  createdAt: Date;
  expiresAt: Date | null;
}

/** Live keys (not expired) one organization may hold (docs/api.md "Authentication"). */
export const API_KEYS_PER_ORGANIZATION = 100;

const COLUMNS = [
  "id",
  "organization_id",
  "team_id",
  "created_by",
  "name",
  "prefix",
  "scopes",
  "created_at",
  "expires_at",
  "last_used_at",
] as const;

const keyFromRow = (row: Omit<Row<"api_keys">, "key_hash">): ApiKeyRecord => ({
  id: row.id,
  organizationId: row.organization_id,
  teamId: row.team_id,
  createdBy: row.created_by,
  name: row.name,
  prefix: row.prefix,
  scopes: row.scopes.split(" ").filter(Boolean),
  createdAt: row.created_at,
  expiresAt: row.expires_at,
  lastUsedAt: row.last_used_at,
});

/**
 * The `api_keys` table (docs/api.md "Authentication"): reads and writes only. Built on the `query`
 * of the caller's transaction (or `queryOf(db)`); the cap of live keys and the audit entries are
 * the API's decisions (`storeApiKey`, `ApiKeysService`).
 */
export class ApiKeysRepository {
  readonly #query: Query;
  constructor(query: Query) {
    this.#query = query;
  }

  /** Locks the organization's row, so parallel creates cannot all see room for one more. */
  async lockOrganization(organizationId: string): Promise<void> {
    await this.#query.kysely
      .selectFrom("organizations")
      .select("id")
      .where("id", "=", organizationId)
      .forUpdate()
      .execute();
  }

  /** Keys of the organization not expired at `at`. */
  async countLive(organizationId: string, at: Date): Promise<number> {
    const live = await this.#query.kysely
      .selectFrom("api_keys")
      .select((eb) => eb.fn.countAll().as("n"))
      .where("organization_id", "=", organizationId)
      .where((eb) => eb.or([eb("expires_at", "is", null), eb("expires_at", ">", at)]))
      .executeTakeFirstOrThrow();
    return toNumber(live.n);
  }

  async insert(input: NewApiKey): Promise<ApiKeyRecord> {
    const row = await this.#query.kysely
      .insertInto("api_keys")
      .values({
        id: crypto.randomUUID(),
        organization_id: input.organizationId,
        created_by: input.createdBy,
        name: input.name,
        prefix: input.prefix,
        key_hash: input.keyHash,
        scopes: input.scopes.join(" "),
        created_at: input.createdAt,
        expires_at: input.expiresAt,
        team_id: input.teamId ?? null,
      })
      .returning(COLUMNS)
      .executeTakeFirstOrThrow();
    return keyFromRow(row);
  }

  async list(organizationId: string): Promise<ApiKeyRecord[]> {
    const rows = await this.#query.kysely
      .selectFrom("api_keys")
      .select(COLUMNS)
      .where("organization_id", "=", organizationId)
      .orderBy("created_at", "desc")
      .orderBy("id", "desc")
      .execute();
    return rows.map(keyFromRow);
  }

  /** Deletes the key; null when it does not exist in the organization. */
  async delete(
    organizationId: string,
    id: string,
  ): Promise<{ name: string; prefix: string; keyHash: string; teamId: string | null } | null> {
    if (!isUuid(id)) return null;
    const row = await this.#query.kysely
      .deleteFrom("api_keys")
      .where("id", "=", id)
      .where("organization_id", "=", organizationId)
      .returning(["name", "prefix", "key_hash", "team_id"])
      .executeTakeFirst();
    return row ? { name: row.name, prefix: row.prefix, keyHash: row.key_hash, teamId: row.team_id } : null;
  }

  /** The key with this hash, or null (revoked or never existed). */
  async findByHash(keyHash: string): Promise<ApiKeyRecord | null> {
    const row = await this.#query.kysely
      .selectFrom("api_keys")
      .select(COLUMNS)
      .where("key_hash", "=", keyHash)
      .executeTakeFirst();
    return row ? keyFromRow(row) : null;
  }

  /** Best effort, called at most once a minute per key by the verifier. */
  async touch(ids: readonly string[], at: Date): Promise<void> {
    if (ids.length === 0) return;
    await this.#query.kysely
      .updateTable("api_keys")
      .set({ last_used_at: at })
      .where("id", "=", (eb) => eb.fn.any(eb.val(ids)))
      .execute();
  }
}
