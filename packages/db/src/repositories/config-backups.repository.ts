import { sql } from "kysely";
import type { Query } from "../database.ts";
import { configChangedAuditInsert } from "./audit-log.repository.ts";

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

const COLUMNS = [
  "b.id",
  "b.router_id",
  "b.created_at",
  "b.checked_at",
  "b.sha256",
  "b.normalized_sha256",
  "b.bytes",
  "b.lines",
] as const;

const selectBackups = (query: Query) => query.kysely.selectFrom("router_config_backups as b").select(COLUMNS);

type BackupRow = Awaited<ReturnType<ReturnType<typeof selectBackups>["executeTakeFirstOrThrow"]>>;

const fromRow = (row: BackupRow): BackupRecord => ({
  id: row.id,
  routerId: row.router_id,
  createdAt: row.created_at,
  checkedAt: row.checked_at,
  sha256: row.sha256,
  normalizedSha256: row.normalized_sha256,
  bytes: row.bytes,
  lines: row.lines,
});

const withContent = (row: BackupRow & { content: string }): BackupRecord & { content: string } => ({
  ...fromRow(row),
  content: row.content,
});

/**
 * The CTEs that open a one-statement write of a read: `r`, the router's row, locked (two reads of
 * one router store one after the other), and `l`, its newest version's id.
 */
const lockedNewest = (
  routerId: string,
) => sql`r as (select id, organization_id from routers where id = ${routerId} for update),
  l as (
    select b.id from router_config_backups b join r on b.router_id = r.id
    order by b.created_at desc, b.id desc limit 1
  )`;

/** A read was stored (the CTE `after` returned a row): the failure shown beside the list is cleared. */
const clearFailureAfter = (routerId: string, after: string) =>
  sql`update router_backup_states set failed_at = null, failure_reason = null
    where router_id = ${routerId} and failed_at is not null and exists (select 1 from ${sql.table(after)})`;

/**
 * Configuration backups (docs/api.md "Configuration backups"): versions per router, newest first
 * by (created_at, id) on `router_config_backups_router_created_index`; the schedule's bookkeeping.
 */
export class ConfigBackupsRepository {
  readonly #query: Query;
  constructor(query: Query) {
    this.#query = query;
  }

  /**
   * Locks the router's row (two reads of one router store one after the other) and reads its
   * newest version without its text and whether a failure is shown beside its list, in one
   * statement; null when the router is gone.
   */
  async lockRouterWithLatest(
    routerId: string,
  ): Promise<{ organizationId: string; latest: BackupRecord | null; failed: boolean } | null> {
    const row = await this.#query.kysely
      .selectFrom("routers as r")
      .leftJoinLateral(
        (eb) =>
          eb
            .selectFrom("router_config_backups as b")
            .select(COLUMNS)
            .whereRef("b.router_id", "=", "r.id")
            .orderBy("b.created_at", "desc")
            .orderBy("b.id", "desc")
            .limit(1)
            .as("l"),
        (join) => join.onTrue(),
      )
      .leftJoin("router_backup_states as s", "s.router_id", "r.id")
      .select([
        "r.organization_id",
        "s.failed_at",
        "l.id",
        "l.router_id",
        "l.created_at",
        "l.checked_at",
        "l.sha256",
        "l.normalized_sha256",
        "l.bytes",
        "l.lines",
      ])
      .where("r.id", "=", routerId)
      .forUpdate("r")
      .executeTakeFirst();
    if (!row) return null;
    const { organization_id: organizationId, failed_at: failedAt, ...latest } = row;
    return {
      organizationId,
      latest: latest.id === null ? null : fromRow(latest as BackupRow),
      failed: failedAt !== null && failedAt !== undefined,
    };
  }

  /** The router's newest version with its text. */
  async latest(routerId: string): Promise<(BackupRecord & { content: string }) | null> {
    const row = await selectBackups(this.#query)
      .select("b.content")
      .where("b.router_id", "=", routerId)
      .orderBy("b.created_at", "desc")
      .orderBy("b.id", "desc")
      .limit(1)
      .executeTakeFirst();
    return row ? withContent(row) : null;
  }

  /**
   * A read equal to the version `id`: under the router's lock (as {@link lockRouterWithLatest}),
   * when `id` is still the newest version and has that normalized digest, its `checked_at` moves
   * to `at` and a failure shown beside the list is cleared, in one statement and no transaction
   * (the usual change step's read, issue 39). False, with nothing written, otherwise.
   */
  async markCheckedIfNewest(routerId: string, id: string, normalizedSha256: string, at: Date): Promise<boolean> {
    // Raw: the lock, the look, the mark and the failure's clearing in one statement (data-modifying CTEs).
    const { rows } = await sql<{ checked: number }>`
      with ${lockedNewest(routerId)},
      m as (
        update router_config_backups set checked_at = ${at}
        where id = ${id} and normalized_sha256 = ${normalizedSha256} and id in (select id from l)
        returning id
      ),
      c as (${clearFailureAfter(routerId, "m")})
      select (select count(*) from m)::int as checked`.execute(this.#query.kysely);
    return rows[0]?.checked === 1;
  }

  /**
   * A read that differs from the version `previousId` (null: the router has none): under the
   * router's lock (as {@link markCheckedIfNewest}), when `previousId` is still the newest version,
   * the read is stored as a new version, audited as `router.config.changed` with `changes` when
   * there was a previous one; the versions beyond `retention` go and a failure shown beside the
   * list is cleared, in one statement. Null, with nothing written, otherwise. The one writer of a
   * version: on its own (issue 39) or in a transaction that holds the lock already.
   */
  async insertIfNewest(
    previousId: string | null,
    read: ConfigRead,
    changes: { added: number; removed: number },
  ): Promise<BackupRecord | null> {
    const id = crypto.randomUUID();
    // Raw: the lock, the look, the insert, its audit entry, the pruning and the failure's clearing
    // in one statement (data-modifying CTEs). The pruning sees the versions before the insert, so
    // it keeps `retention - 1` of them.
    const audit = previousId === null ? sql`` : sql`, a as (${configChangedAuditInsert("s", previousId, changes)})`;
    const { rows } = await sql<{ stored: number }>`
      with ${lockedNewest(read.routerId)},
      i as (
        insert into router_config_backups (id, router_id, created_at, checked_at, sha256, normalized_sha256, bytes, lines, content)
        select ${id}, r.id, ${read.at}, ${read.at}, ${read.sha256}, ${read.normalizedSha256}, ${read.bytes}, ${read.lines},
          ${read.content}
        from r where (select id from l) is not distinct from ${previousId}::uuid
        returning id, router_id, created_at
      ),
      s as (select i.id, i.router_id, i.created_at, r.organization_id from i join r on r.id = i.router_id)${audit},
      p as (
        delete from router_config_backups where id in (
          select b.id from router_config_backups b where b.router_id = ${read.routerId} and exists (select 1 from i)
          order by b.created_at desc, b.id desc offset ${Math.max(0, read.retention - 1)}
        )
      ),
      c as (${clearFailureAfter(read.routerId, "i")})
      select (select count(*) from i)::int as stored`.execute(this.#query.kysely);
    if (rows[0]?.stored !== 1) return null;
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

  /** A read succeeded: the last failure shown beside the list is cleared. */
  async clearFailure(routerId: string): Promise<void> {
    await this.#query.kysely
      .insertInto("router_backup_states")
      .values({ router_id: routerId, failed_at: null, failure_reason: null })
      .onConflict((oc) => oc.column("router_id").doUpdateSet({ failed_at: null, failure_reason: null }))
      .execute();
  }

  /** The same text was read again: only the version's `checked_at` moves. */
  async markChecked(id: string, at: Date): Promise<void> {
    await this.#query.kysely
      .updateTable("router_config_backups")
      .set({ checked_at: at })
      .where("id", "=", id)
      .execute();
  }

  /** A backup job failed for good: shown beside the list until the next success. */
  async recordFailure(routerId: string, at: Date, reason: string): Promise<void> {
    await this.#query.kysely
      .insertInto("router_backup_states")
      .columns(["router_id", "failed_at", "failure_reason"])
      .expression((eb) =>
        eb
          .selectFrom("routers")
          .select((s) => [
            "id",
            s.cast<Date>(s.val(at), "timestamptz").as("failed_at"),
            s.cast<string>(s.val(reason.slice(0, 500)), "text").as("failure_reason"),
          ])
          .where("id", "=", routerId),
      )
      .onConflict((oc) =>
        oc.column("router_id").doUpdateSet((eb) => ({
          failed_at: eb.ref("excluded.failed_at"),
          failure_reason: eb.ref("excluded.failure_reason"),
        })),
      )
      .execute();
  }

  async lastFailure(routerId: string): Promise<BackupFailure | null> {
    const row = await this.#query.kysely
      .selectFrom("router_backup_states")
      .select(["failed_at", "failure_reason"])
      .where("router_id", "=", routerId)
      .where("failed_at", "is not", null)
      .executeTakeFirst();
    return row?.failed_at ? { failedAt: row.failed_at, reason: row.failure_reason ?? "" } : null;
  }

  /** Newest first, strictly older than `before` when given. */
  async list(
    routerId: string,
    limit: number,
    before?: { createdAt: Date; id: string } | undefined,
  ): Promise<BackupRecord[]> {
    const rows = await selectBackups(this.#query)
      .where("b.router_id", "=", routerId)
      .$if(before !== undefined, (qb) =>
        qb.where((eb) =>
          eb(eb.refTuple("b.created_at", "b.id"), "<", eb.tuple(before?.createdAt ?? new Date(0), before?.id ?? "")),
        ),
      )
      .orderBy("b.created_at", "desc")
      .orderBy("b.id", "desc")
      .limit(limit)
      .execute();
    return rows.map(fromRow);
  }

  /** One version with its text; null when it is not the router's. */
  async get(routerId: string, id: string): Promise<(BackupRecord & { content: string }) | null> {
    const row = await selectBackups(this.#query)
      .select("b.content")
      .where("b.id", "=", id)
      .where("b.router_id", "=", routerId)
      .executeTakeFirst();
    return row ? withContent(row) : null;
  }

  /** The version stored just before `backup`, with its text. */
  async previous(backup: BackupRecord): Promise<(BackupRecord & { content: string }) | null> {
    const row = await selectBackups(this.#query)
      .select("b.content")
      .where("b.router_id", "=", backup.routerId)
      .where((eb) => eb(eb.refTuple("b.created_at", "b.id"), "<", eb.tuple(backup.createdAt, backup.id)))
      .orderBy("b.created_at", "desc")
      .orderBy("b.id", "desc")
      .limit(1)
      .executeTakeFirst();
    return row ? withContent(row) : null;
  }

  /**
   * Routers due for a scheduled backup (an assigned tunnel address, not queued within `since`),
   * marked queued now; at most `limit` per call, those waiting longest first.
   */
  async claimDue(since: Date, now: Date, limit: number): Promise<string[]> {
    const rows = await this.#query.kysely
      .insertInto("router_backup_states")
      .columns(["router_id", "queued_at"])
      .expression((eb) =>
        eb
          .selectFrom("routers as r")
          .leftJoin("router_backup_states as s", "s.router_id", "r.id")
          .select((s) => ["r.id", s.cast<Date>(s.val(now), "timestamptz").as("queued_at")])
          .where("r.tunnel_ip", "is not", null)
          .where((w) => w.or([w("s.queued_at", "is", null), w("s.queued_at", "<", since)]))
          .orderBy("s.queued_at", (ob) => ob.asc().nullsFirst())
          .orderBy("r.id")
          .limit(limit),
      )
      .onConflict((oc) => oc.column("router_id").doUpdateSet((eb) => ({ queued_at: eb.ref("excluded.queued_at") })))
      .returning("router_id")
      .execute();
    return rows.map((row) => row.router_id);
  }
}
