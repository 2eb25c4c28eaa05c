import type { Query } from "../database.ts";
import { toNumber } from "./sql-values.ts";

const ms = (column: string, alias: string) => `(extract(epoch from ${column}) * 1000)::float8 as ${alias}`;

/** A stored configuration version, without its text. */
export interface BackupRecord {
  id: string;
  routerId: string;
  createdAt: Date;
  checkedAt: Date;
  /** SHA-256 of the text as read and served. */
  sha256: string;
  /** SHA-256 of the normalized text (no dated first line): what a new read is compared by; null on rows written without it. */
  normalizedSha256: string | null;
  bytes: number;
  lines: number;
}

export interface BackupFailure {
  failedAt: Date;
  reason: string;
}

/** A configuration as read from the router, digested by the caller (`digestConfigExport`). */
export interface ConfigRead {
  routerId: string;
  content: string;
  sha256: string;
  normalizedSha256: string;
  bytes: number;
  lines: number;
  at: Date;
  /** BACKUP_RETENTION: versions kept per router. */
  retention: number;
}

export type StoreOutcome =
  | { kind: "unchanged"; backup: BackupRecord }
  | { kind: "created"; backup: BackupRecord; previous: BackupRecord | null; linesAdded: number; linesRemoved: number };

const COLUMNS = `b.id, b.router_id, ${ms("b.created_at", "created_ms")}, ${ms("b.checked_at", "checked_ms")}, b.sha256, b.normalized_sha256, b.bytes, b.lines`;

const fromRow = (row: Record<string, unknown>): BackupRecord => ({
  id: String(row.id),
  routerId: String(row.router_id),
  createdAt: new Date(toNumber(row.created_ms)),
  checkedAt: new Date(toNumber(row.checked_ms)),
  sha256: String(row.sha256),
  normalizedSha256:
    row.normalized_sha256 === null || row.normalized_sha256 === undefined ? null : String(row.normalized_sha256),
  bytes: toNumber(row.bytes),
  lines: toNumber(row.lines),
});

/**
 * Configuration backups (docs/api.md "Configuration backups"): versions per router, newest first
 * by (created_at, id) on `router_config_backups_router_created_index`; the schedule's bookkeeping.
 */
export class ConfigBackupsRepository {
  readonly #query: Query;
  constructor(query: Query) {
    this.#query = query;
  }

  /** Locks the router's row (two reads of one router store one after the other); null when it is gone. */
  async lockRouter(routerId: string): Promise<{ organizationId: string } | null> {
    const [router] = await this.#query<{ organization_id: string }>(
      "select organization_id from routers where id = $1::uuid for update",
      [routerId],
    );
    return router ? { organizationId: String(router.organization_id) } : null;
  }

  /** The router's newest version with its text. */
  async latest(routerId: string): Promise<(BackupRecord & { content: string }) | null> {
    const [row] = await this.#query<Record<string, unknown>>(
      `select ${COLUMNS}, b.content from router_config_backups b where b.router_id = $1::uuid
       order by b.created_at desc, b.id desc limit 1`,
      [routerId],
    );
    return row ? { ...fromRow(row), content: String(row.content) } : null;
  }

  /** A read succeeded: the last failure shown beside the list is cleared. */
  async clearFailure(routerId: string): Promise<void> {
    await this.#query(
      `insert into router_backup_states (router_id, failed_at, failure_reason) values ($1::uuid, null, null)
       on conflict (router_id) do update set failed_at = null, failure_reason = null`,
      [routerId],
    );
  }

  /** The same text was read again: only the version's `checked_at` moves. */
  async markChecked(id: string, at: Date): Promise<void> {
    await this.#query(
      "update router_config_backups set checked_at = to_timestamp($2::float8 / 1000.0) where id = $1::uuid",
      [id, at.getTime()],
    );
  }

  async insert(read: Omit<ConfigRead, "retention">): Promise<BackupRecord> {
    const id = crypto.randomUUID();
    await this.#query(
      `insert into router_config_backups (id, router_id, created_at, checked_at, sha256, normalized_sha256, bytes, lines, content)
       values ($1::uuid, $2::uuid, to_timestamp($3::float8 / 1000.0), to_timestamp($3::float8 / 1000.0), $4, $5, $6, $7, $8)`,
      [id, read.routerId, read.at.getTime(), read.sha256, read.normalizedSha256, read.bytes, read.lines, read.content],
    );
    return {
      id,
      routerId: read.routerId,
      createdAt: read.at,
      checkedAt: read.at,
      sha256: read.sha256,
      normalizedSha256: read.normalizedSha256,
      bytes: read.bytes,
      lines: read.lines,
    };
  }

  /** Deletes the router's oldest versions beyond the newest `retention`. */
  async pruneBeyond(routerId: string, retention: number): Promise<void> {
    await this.#query(
      `delete from router_config_backups where id in (
         select id from router_config_backups where router_id = $1::uuid
         order by created_at desc, id desc offset $2::int)`,
      [routerId, retention],
    );
  }

  /** A backup job failed for good: shown beside the list until the next success. */
  async recordFailure(routerId: string, at: Date, reason: string): Promise<void> {
    await this.#query(
      `insert into router_backup_states (router_id, failed_at, failure_reason)
       select id, to_timestamp($2::float8 / 1000.0), $3 from routers where id = $1::uuid
       on conflict (router_id) do update set failed_at = excluded.failed_at, failure_reason = excluded.failure_reason`,
      [routerId, at.getTime(), reason.slice(0, 500)],
    );
  }

  async lastFailure(routerId: string): Promise<BackupFailure | null> {
    const [row] = await this.#query<Record<string, unknown>>(
      `select ${ms("failed_at", "failed_ms")}, failure_reason from router_backup_states
       where router_id = $1::uuid and failed_at is not null`,
      [routerId],
    );
    return row ? { failedAt: new Date(toNumber(row.failed_ms)), reason: String(row.failure_reason ?? "") } : null;
  }

  /** Newest first, strictly older than `before` when given. */
  async list(
    routerId: string,
    limit: number,
    before?: { createdAt: Date; id: string } | undefined,
  ): Promise<BackupRecord[]> {
    const params: unknown[] = [routerId, limit];
    let where = "b.router_id = $1::uuid";
    if (before) {
      params.push(before.createdAt.getTime(), before.id);
      where += " and (b.created_at, b.id) < (to_timestamp($3::float8 / 1000.0), $4::uuid)";
    }
    const rows = await this.#query<Record<string, unknown>>(
      `select ${COLUMNS} from router_config_backups b where ${where}
       order by b.created_at desc, b.id desc limit $2::int`,
      params,
    );
    return rows.map(fromRow);
  }

  /** One version with its text; null when it is not the router's. */
  async get(routerId: string, id: string): Promise<(BackupRecord & { content: string }) | null> {
    const [row] = await this.#query<Record<string, unknown>>(
      `select ${COLUMNS}, b.content from router_config_backups b where b.id = $1::uuid and b.router_id = $2::uuid`,
      [id, routerId],
    );
    return row ? { ...fromRow(row), content: String(row.content) } : null;
  }

  /** The version stored just before `backup`, with its text. */
  async previous(backup: BackupRecord): Promise<(BackupRecord & { content: string }) | null> {
    const [row] = await this.#query<Record<string, unknown>>(
      `select ${COLUMNS}, b.content from router_config_backups b
       where b.router_id = $1::uuid and (b.created_at, b.id) < (to_timestamp($2::float8 / 1000.0), $3::uuid)
       order by b.created_at desc, b.id desc limit 1`,
      [backup.routerId, backup.createdAt.getTime(), backup.id],
    );
    return row ? { ...fromRow(row), content: String(row.content) } : null;
  }

  /**
   * Routers due for a scheduled backup (an assigned tunnel address, not queued within `since`),
   * marked queued now; at most `limit` per call, those waiting longest first.
   */
  async claimDue(since: Date, now: Date, limit: number): Promise<string[]> {
    const rows = await this.#query<{ id: string }>(
      `insert into router_backup_states (router_id, queued_at)
       select r.id, to_timestamp($2::float8 / 1000.0) from routers r
       left join router_backup_states s on s.router_id = r.id
       where r.tunnel_ip is not null and (s.queued_at is null or s.queued_at < to_timestamp($1::float8 / 1000.0))
       order by s.queued_at nulls first, r.id
       limit $3::int
       on conflict (router_id) do update set queued_at = excluded.queued_at
       returning router_id as id`,
      [since.getTime(), now.getTime(), limit],
    );
    return rows.map((row) => String(row.id));
  }
}
