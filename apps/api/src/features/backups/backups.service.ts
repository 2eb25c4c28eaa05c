import type { BackupFailure, BackupRecord, RouterRecord } from "@fleet/db";
import {
  AppError,
  BACKUP_LIMITS,
  formatIsoUtc,
  isUuid,
  normalizeConfigExport,
  type TBackup,
  type TBackupJob,
  type TBackupsPage,
  type TDiffBackupInput,
  type TGetBackupInput,
  type TListBackupsInput,
  type TTakeBackupInput,
} from "@fleet/shared";
import type { DiffPatch } from "./config-diff.ts";

type StoredBackup = BackupRecord & { content: string };

export interface BackupStore {
  list(routerId: string, limit: number, before?: { createdAt: Date; id: string }): Promise<BackupRecord[]>;
  get(routerId: string, id: string): Promise<StoredBackup | null>;
  previous(backup: BackupRecord): Promise<StoredBackup | null>;
  lastFailure(routerId: string): Promise<BackupFailure | null>;
}

export interface BackupsServiceDeps {
  backups: BackupStore;
  routers: { findInTeam(teamId: string, routerId: string): Promise<RouterRecord | null> };
  /** Queues the router's backup job (`queueBackupJob`); its id, or null when the queue refused it. */
  queue(routerId: string): Promise<string | null>;
  /** Computes a unified diff off the event loop, bounded in time (`offLoopPatch`). */
  patch: DiffPatch;
}

const toBackup = (b: BackupRecord): TBackup => ({
  id: b.id,
  created_at: formatIsoUtc(b.createdAt),
  checked_at: formatIsoUtc(b.checkedAt),
  sha256: b.sha256,
  bytes: b.bytes,
  lines: b.lines,
});

const encodeCursor = (b: BackupRecord): string => Buffer.from(`${b.createdAt.getTime()}:${b.id}`).toString("base64url");

const CURSOR = /^(\d{1,15}):([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

const decodeCursor = (cursor: string): { createdAt: Date; id: string } | null => {
  const match = CURSOR.exec(Buffer.from(cursor, "base64url").toString("utf8"));
  if (!match?.[1] || !match[2]) return null;
  return { createdAt: new Date(Number(match[1])), id: match[2] };
};

const routerNotFound = () => new AppError("not_found", "Router not found.");
const backupNotFound = () => new AppError("not_found", "Backup not found.");

/** Configuration backups (docs/api.md "Configuration backups"): on demand, list, text and diff. */
export class BackupsService {
  readonly #deps: BackupsServiceDeps;
  constructor(deps: BackupsServiceDeps) {
    this.#deps = deps;
  }

  async #router(teamId: string, routerId: string): Promise<RouterRecord> {
    const router = await this.#deps.routers.findInTeam(teamId, routerId);
    if (!router) throw routerNotFound();
    return router;
  }

  async #backup(routerId: string, id: string): Promise<StoredBackup> {
    const backup = isUuid(id) ? await this.#deps.backups.get(routerId, id.toLowerCase()) : null;
    if (!backup) throw backupNotFound();
    return backup;
  }

  /** Queues a backup now; the agent runs it after the router's earlier jobs. */
  async take(teamId: string, input: TTakeBackupInput): Promise<TBackupJob["data"]> {
    const router = await this.#router(teamId, input.router_id);
    if (!router.tunnelIp) {
      throw new AppError("conflict", "The router has no assigned tunnel address, so the agent cannot reach it.");
    }
    const jobId = await this.#deps.queue(router.id);
    if (!jobId) throw new AppError("unavailable", "The backup could not be queued; try again.");
    return { job_id: jobId };
  }

  /** Versions newest first, a page at a time, and the last failure since the last success. */
  async list(teamId: string, input: TListBackupsInput): Promise<Omit<TBackupsPage, "status">> {
    const limit = input.limit ?? BACKUP_LIMITS.page.default;
    const before = input.cursor === undefined ? undefined : decodeCursor(input.cursor);
    if (before === null) {
      throw new AppError("validation_failed", "The cursor is not one this API handed out.", {
        fields: { cursor: ["must be a next_cursor from a previous page"] },
      });
    }
    const router = await this.#router(teamId, input.router_id);
    const [rows, failure] = await Promise.all([
      this.#deps.backups.list(router.id, limit + 1, before),
      this.#deps.backups.lastFailure(router.id),
    ]);
    const page = rows.slice(0, limit);
    const last = page.at(-1);
    return {
      data: page.map(toBackup),
      next_cursor: rows.length > limit && last ? encodeCursor(last) : null,
      last_failure: failure ? { failed_at: formatIsoUtc(failure.failedAt), reason: failure.reason } : null,
    };
  }

  /** The export as read from the router. */
  async get(teamId: string, input: TGetBackupInput): Promise<string> {
    const router = await this.#router(teamId, input.router_id);
    return (await this.#backup(router.id, input.id)).content;
  }

  /**
   * A unified diff from `against` (default: the version before) to this one, both without their
   * dated first line; the first version is compared with nothing. `against` must be the same router's.
   */
  async diff(teamId: string, input: TDiffBackupInput): Promise<string> {
    const router = await this.#router(teamId, input.router_id);
    const backup = await this.#backup(router.id, input.id);
    const base =
      input.against === undefined
        ? await this.#deps.backups.previous(backup)
        : await this.#backup(router.id, input.against);
    return this.#deps.patch({
      oldName: base ? `backup-${base.id}` : "/dev/null",
      newName: `backup-${backup.id}`,
      oldText: base ? normalizeConfigExport(base.content) : "",
      newText: normalizeConfigExport(backup.content),
      oldHeader: base ? formatIsoUtc(base.createdAt) : undefined,
      newHeader: formatIsoUtc(backup.createdAt),
    });
  }
}
