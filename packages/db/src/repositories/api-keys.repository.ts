import { formatIsoUtc, isUuid } from "@fleet/shared";
import type { Database } from "../database.ts";
import { type AuditOrigin, insertAuditEntry } from "./audit-log.repository.ts";
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

/** API keys of organizations; creating and revoking are audited in the same transaction. */
export class ApiKeysRepository {
  readonly #db: Database;
  constructor(db: Database) {
    this.#db = db;
  }

  /**
   * Stores the key and audits it, unless the organization already holds `limit` live keys (then
   * null, nothing written). The organization's row is locked first, so parallel creates cannot
   * all see room for one more.
   */
  async create(input: NewApiKey, origin: AuditOrigin, limit = API_KEYS_PER_ORGANIZATION): Promise<ApiKeyRecord | null> {
    return this.#db.transaction(async (query) => {
      await query("select id from organizations where id = $1 for update", [input.organizationId]);
      const [live] = await query<{ n: number | string }>(
        `select count(*)::int as n from api_keys
         where organization_id = $1 and (expires_at is null or expires_at > to_timestamp($2::float8 / 1000.0))`,
        [input.organizationId, input.createdAt.getTime()],
      );
      if (toNumber(live?.n ?? 0) >= limit) return null;
      const rows = await query<Row>(
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
      const key = keyFromRow(row);
      await insertAuditEntry(query, {
        organizationId: key.organizationId,
        occurredAt: input.createdAt,
        action: "api_key.created",
        actor: origin.actor,
        sourceIp: origin.sourceIp,
        target: { type: "api_key", id: key.id },
        details: {
          name: key.name,
          prefix: key.prefix,
          scopes: key.scopes,
          ...(key.teamId ? { team_id: key.teamId } : {}),
          expires_at: key.expiresAt ? formatIsoUtc(key.expiresAt) : null,
        },
      });
      return key;
    });
  }

  async list(organizationId: string): Promise<ApiKeyRecord[]> {
    const rows = await this.#db.query<Row>(
      `select ${COLUMNS} from api_keys k where k.organization_id = $1 order by k.created_at desc, k.id desc`,
      [organizationId],
    );
    return rows.map(keyFromRow);
  }

  /** Deletes the key; false when it does not exist in the organization. */
  async revoke(
    organizationId: string,
    id: string,
    now: Date,
    origin: AuditOrigin,
  ): Promise<{ keyHash: string } | null> {
    if (!isUuid(id)) return null;
    return this.#db.transaction(async (query) => {
      const rows = await query<Row>(
        "delete from api_keys where id = $1 and organization_id = $2 returning id, name, prefix, key_hash",
        [id, organizationId],
      );
      const row = rows[0];
      if (!row) return null;
      await insertAuditEntry(query, {
        organizationId,
        occurredAt: now,
        action: "api_key.revoked",
        actor: origin.actor,
        sourceIp: origin.sourceIp,
        target: { type: "api_key", id },
        details: { name: String(row.name), prefix: String(row.prefix) },
      });
      return { keyHash: String(row.key_hash) };
    });
  }

  /** The key with this hash, or null (revoked or never existed). */
  async findByHash(keyHash: string): Promise<ApiKeyRecord | null> {
    const rows = await this.#db.query<Row>(`select ${COLUMNS} from api_keys k where k.key_hash = $1`, [keyHash]);
    return rows[0] ? keyFromRow(rows[0]) : null;
  }

  /** Best effort, called at most once a minute per key by the verifier. */
  async touch(ids: readonly string[], at: Date): Promise<void> {
    if (ids.length === 0) return;
    await this.#db.query(
      "update api_keys set last_used_at = to_timestamp($2::float8 / 1000.0) where id = any($1::uuid[])",
      [ids, at.getTime()],
    );
  }
}
