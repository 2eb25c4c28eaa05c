import {
  BACKUP_JOB_ATTEMPTS,
  type BackupRecord,
  ConfigBackupsRepository,
  type ConfigRead,
  type Database,
  type ForwardTargetsRepository,
  type JobRecord,
  queryOf,
  type StoreOutcome,
} from "@fleet/db";
import { type Clock, digestConfigExport, type TunnelNetwork, ZReconcileJobPayload } from "@fleet/shared";
import type { Logger } from "pino";
import {
  type RouterOsClient,
  type RouterOsConnector,
  RouterOsOutputTooLargeError,
} from "../routeros/routeros-client.ts";
import { exportConfiguration } from "../routeros/routeros-commands.ts";
import { describeJobError, jobPayload, PermanentJobError } from "./job-errors.ts";
import { withRouterSession } from "./router-session.ts";
import { countChangedLinesLinear, type LineChanges, offLoopLineCounts } from "./count-changes.ts";
import { tunnelTarget } from "./tunnel-target.ts";

export interface BackupJobDeps {
  /** A read is stored in one transaction of its own; repositories get its `query`. */
  db: Pick<Database, "query" | "transaction">;
  backups: ConfigBackupsRepository;
  forwards: ForwardTargetsRepository;
  connector: RouterOsConnector;
  clock: Clock;
  logger: Logger;
  sshPort: number;
  tunnelNetwork: TunnelNetwork;
  /** BACKUP_RETENTION. */
  retention: number;
  /** BACKUP_MAX_BYTES: the read stops at this many bytes of export. */
  maxBytes: number;
}

/**
 * Why an export cannot be stored, or undefined. NUL is never part of a RouterOS export and
 * PostgreSQL refuses it in `text`: a read holding one is refused here, as a failure the router's
 * backup list shows, rather than failing in the insert.
 */
export const unstorableExport = (content: string): string | undefined =>
  content.includes("\u0000") ? "the router's export holds a NUL character; nothing was stored" : undefined;

/** Lines added and removed between two exports, off the event loop (count-changes.ts). */
export const countChangedLines = offLoopLineCounts();

/** A stored version as listed: its row without the text. */
const withoutText = ({ content: _text, ...version }: BackupRecord & { content: string }): BackupRecord => version;

/**
 * Stores a read: equal to the newest version (same normalized digest) only moves its `checked_at`;
 * else a new version, audited as `router.config.changed` when there was a previous one, and the
 * oldest versions beyond the retention go. `countChanges` compares the previous text with the new
 * one; it runs before any lock (a diff may take seconds, in a worker thread), so it never holds the
 * router's lock or PGlite's one connection. A read whose look still holds (the newest version is the
 * one read first) is written in one statement under the router's lock; else in a transaction that
 * locks the router and looks again. Null when the router is gone.
 */
export const storeConfigRead = async (
  db: Pick<Database, "query" | "transaction">,
  read: ConfigRead,
  countChanges: (previous: string, next: string) => LineChanges | Promise<LineChanges>,
): Promise<StoreOutcome | null> => {
  const repository = new ConfigBackupsRepository(queryOf(db));
  // One read, outside any transaction: the writes below check it again under the lock.
  const before = await repository.latest(read.routerId);
  const previous = before && withoutText(before);
  let counted: { id: string; changes: LineChanges } | undefined;
  if (before && previous && before.normalizedSha256 === read.normalizedSha256) {
    // The same configuration as the newest version (a change step's backup, mostly).
    if (await repository.markCheckedIfNewest(read.routerId, before.id, read.normalizedSha256, read.at)) {
      return { kind: "unchanged", backup: { ...previous, checkedAt: read.at } };
    }
  } else {
    const changes = before ? await countChanges(before.content, read.content) : { added: read.lines, removed: 0 };
    counted = before ? { id: before.id, changes } : undefined;
    const backup = await repository.insertIfNewest(before?.id ?? null, read, changes);
    if (backup) {
      return { kind: "created", backup, previous, linesAdded: changes.added, linesRemoved: changes.removed };
    }
  }
  // A version stored or gone since the look (rare): the router locked, the newest version again.
  return db.transaction(async (query): Promise<StoreOutcome | null> => {
    const backups = new ConfigBackupsRepository(query);
    // The newest version's row without its text: the text was read (and compared) before.
    const locked = await backups.lockRouterWithLatest(read.routerId);
    if (!locked) return null;
    const { latest } = locked;
    if (latest && latest.normalizedSha256 === read.normalizedSha256) {
      if (locked.failed) await backups.clearFailure(read.routerId);
      await backups.markChecked(latest.id, read.at);
      return { kind: "unchanged", backup: { ...latest, checkedAt: read.at } };
    }
    let changes: LineChanges;
    if (!latest) changes = { added: read.lines, removed: 0 };
    else if (counted?.id === latest.id) changes = counted.changes;
    else {
      // Another read stored in between: the linear count, rather than a diff under the lock.
      const text = (await backups.get(read.routerId, latest.id))?.content ?? "";
      changes = countChangedLinesLinear(text, read.content);
    }
    // The lock is this transaction's, and the statement looks again on a fresh snapshot.
    const backup = await backups.insertIfNewest(latest?.id ?? null, read, changes);
    if (!backup) throw new Error("another version was stored while the router was locked; the read is taken again");
    return {
      kind: "created",
      backup,
      previous: latest ?? null,
      linesAdded: changes.added,
      linesRemoved: changes.removed,
    };
  });
};

/**
 * `router.backup`: reads the router's configuration with `/export terse` and stores it (a new
 * version only when it changed). The last failed attempt is recorded for the router's backup list
 * (nothing half-written: the version is stored in one transaction after the whole read).
 */
export const backupRouterHandler =
  (deps: BackupJobDeps) =>
  /** `session`: an SSH session to the router the caller already has (a change step's), used instead of a new login. */
  async (job: JobRecord, session?: RouterOsClient): Promise<void> => {
    const routerId = jobPayload(ZReconcileJobPayload, job).router_id;
    // A caller's session is logged in already: no address to look up (a gone router stores nothing).
    const tunnelIp = session ? null : await deps.forwards.routerTunnelIp(routerId);
    if (!session && !tunnelIp) {
      deps.logger.info({ routerId }, "router gone or without an assigned tunnel address; no backup");
      return;
    }
    let outcome: StoreOutcome | null;
    try {
      let content: string;
      try {
        const read = (router: RouterOsClient) => router.exec(exportConfiguration(), { maxBytes: deps.maxBytes });
        content = session
          ? await read(session)
          : await withRouterSession(deps.connector, tunnelTarget(deps, routerId, tunnelIp), read);
      } catch (error) {
        // A router that answers more than the cap answers it again: no retry (docs/api.md "Configuration backups").
        if (error instanceof RouterOsOutputTooLargeError) {
          throw new PermanentJobError(
            `the router's export is larger than BACKUP_MAX_BYTES (${deps.maxBytes} bytes); the read was stopped at the cap and nothing was stored`,
            { cause: error },
          );
        }
        throw error;
      }
      const refusal = unstorableExport(content);
      if (refusal) throw new PermanentJobError(refusal);
      outcome = await storeConfigRead(
        deps.db,
        { routerId, content, ...digestConfigExport(content), at: deps.clock.now(), retention: deps.retention },
        countChangedLines,
      );
    } catch (error) {
      // Every failed read is shown beside the list (a refused export, the store itself), once no
      // retry is left to fix it.
      const final = job.attempts >= BACKUP_JOB_ATTEMPTS || error instanceof PermanentJobError;
      if (final) {
        const reason = error instanceof PermanentJobError ? error.message : describeJobError(error);
        await deps.backups.recordFailure(routerId, deps.clock.now(), reason);
      }
      throw error;
    }
    if (outcome?.kind === "created") {
      deps.logger.info(
        { routerId, backupId: outcome.backup.id, added: outcome.linesAdded, removed: outcome.linesRemoved },
        "router configuration changed; new backup stored",
      );
    }
  };
