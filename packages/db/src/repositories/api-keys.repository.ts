import { isUuid } from "@fleet/shared";
import type { Query } from "../database.ts";
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

type Row = Record<string, unknown>;

const ms = (column: string, alias: string) => `(extract(epoch from ${column}) * 1000)::float8 as ${alias}`;

/** Live keys (not expired) one organization may hold (docs/api.md "Authentication"). */
export const API_KEYS_PER_ORGANIZATION = 100;

const COLUMNS = `k.id, k.organization_id, k.team_id, k.created_by, k.name, k.prefix, k.scopes, ${ms("k.created_at", "created_ms")},
  ${ms("k.expires_at", "expires_ms")}, ${ms("k.last_used_at", "last_used_ms")}`;

const dateOrNull = (value: unknown): Date | null =>
  value === null || value === undefined ? null : new Date(toNumber(value));

const keyFromRow = (row: Row): ApiKeyRecord => ({
  id: String(row.id),
  organizationId: String(row.organization_id),
  teamId: row.team_id === null || row.team_id === undefined ? null : String(row.team_id),
  createdBy: String(row.created_by),
  name: String(row.name),
  prefix: String(row.prefix),
  scopes: String(row.scopes).split(" ").filter(Boolean),
  createdAt: new Date(toNumber(row.created_ms)),
  expiresAt: dateOrNull(row.expires_ms),
  lastUsedAt: dateOrNull(row.last_used_ms),
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
    await this.#query("select id from organizations where id = $1 for update", [organizationId]);
  }

  /** Keys of the organization not expired at `at`. */
  async countLive(organizationId: string, at: Date): Promise<number> {
    const [live] = await this.#query<{ n: number | string }>(
      `select count(*)::int as n from api_keys
       where organization_id = $1 and (expires_at is null or expires_at > to_timestamp($2::float8 / 1000.0))`,
      [organizationId, at.getTime()],
    );
    return toNumber(live?.n ?? 0);
  }

  async insert(input: NewApiKey): Promise<ApiKeyRecord> {
    const rows = await this.#query<Row>(
      `insert into api_keys as k (id, organization_id, created_by, name, prefix, key_hash, scopes, created_at, expires_at, team_id)
         values (gen_random_uuid(), $1, $2, $3, $4, $5, $6, to_timestamp($7::float8 / 1000.0),
           to_timestamp($8::float8 / 1000.0), $9)
         returning ${COLUMNS}`,
      [
        input.organizationId,
        input.createdBy,
        input.name,
        input.prefix,
        input.keyHash,
        input.scopes.join(" "),
        input.createdAt.getTime(),
        input.expiresAt?.getTime() ?? null,
        input.teamId ?? null,
      ],
    );
    const row = rows[0];
    if (!row) throw new Error("api key insert returned no row");
    return keyFromRow(row);
  }

  async list(organizationId: string): Promise<ApiKeyRecord[]> {
    const rows = await this.#query<Row>(
      `select ${COLUMNS} from api_keys k where k.organization_id = $1 order by k.created_at desc, k.id desc`,
      [organizationId],
    );
    return rows.map(keyFromRow);
  }

  /** Deletes the key; null when it does not exist in the organization. */
  async delete(
    organizationId: string,
    id: string,
  ): Promise<{ name: string; prefix: string; keyHash: string; teamId: string | null } | null> {
    if (!isUuid(id)) return null;
    const rows = await this.#query<Row>(
      "delete from api_keys where id = $1 and organization_id = $2 returning id, name, prefix, key_hash, team_id",
      [id, organizationId],
    );
    const row = rows[0];
    return row
      ? {
          name: String(row.name),
          prefix: String(row.prefix),
          keyHash: String(row.key_hash),
          teamId: row.team_id === null || row.team_id === undefined ? null : String(row.team_id),
        }
      : null;
  }

  /** The key with this hash, or null (revoked or never existed). */
  async findByHash(keyHash: string): Promise<ApiKeyRecord | null> {
    const rows = await this.#query<Row>(`select ${COLUMNS} from api_keys k where k.key_hash = $1`, [keyHash]);
    return rows[0] ? keyFromRow(rows[0]) : null;
  }

  /** Best effort, called at most once a minute per key by the verifier. */
  async touch(ids: readonly string[], at: Date): Promise<void> {
    if (ids.length === 0) return;
    await this.#query(
      "update api_keys set last_used_at = to_timestamp($2::float8 / 1000.0) where id = any($1::uuid[])",
      [ids, at.getTime()],
    );
  }
}
