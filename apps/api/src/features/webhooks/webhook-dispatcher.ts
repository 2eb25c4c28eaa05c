import { type Database, type DeliveryEnqueuer, queryOf, WebhooksRepository } from "@fleet/db";
import { type Clock, coalescingRunner } from "@fleet/shared";
import type { Logger } from "pino";
import { queueDeliveries } from "./queue-deliveries.ts";
import { renderAuditEntry } from "./webhooks.mapper.ts";

export interface WebhookDispatcherDeps {
  /** Each pass runs in one transaction of its own; repositories get its `query`. */
  db: Pick<Database, "query" | "transaction">;
  /** Queues the delivery jobs inside that transaction. */
  jobs: DeliveryEnqueuer;
  /** Starts the delivery worker of this process once any webhook exists. */
  runtime: { started: boolean; ensure(): Promise<unknown> };
  clock: Clock;
  logger: Logger;
  /** Called when deliveries were queued (the worker claims them without waiting for its poll). */
  onQueued: () => void;
  /** How often the outbox is read when nobody wakes the dispatcher (entries from other processes). */
  pollMs?: number;
  batch?: number;
}

/**
 * Empties the outbox: audit entries not yet dispatched become deliveries and durable jobs. Runs in
 * every API process (SKIP LOCKED shares the work); entries written by the heartbeat daemon or the
 * relay in other processes are found by the poll, those of this process at once by `wake()`.
 */
export class WebhookDispatcher {
  readonly #deps: Required<WebhookDispatcherDeps>;
  readonly #timer: NodeJS.Timeout;
  readonly #runner = coalescingRunner(() => this.#pass());
  #stopped = false;

  constructor(deps: WebhookDispatcherDeps) {
    this.#deps = { pollMs: 1_000, batch: 200, ...deps };
    this.#timer = setInterval(() => this.wake(), this.#deps.pollMs);
    this.#timer.unref();
  }

  wake(): void {
    if (!this.#stopped) void this.#runner.run();
  }

  /** One full pass now (tests). */
  run(): Promise<void> {
    return this.#runner.run();
  }

  async close(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    await this.#runner.current();
  }

  async #pass(): Promise<void> {
    try {
      const webhooks = new WebhooksRepository(queryOf(this.#deps.db));
      if (!this.#deps.runtime.started && (await webhooks.anyEnabled())) await this.#deps.runtime.ensure();
      for (;;) {
        const taken = await this.#dispatch(this.#deps.batch, this.#deps.clock.now());
        if (taken > 0) this.#deps.onQueued();
        if (taken < this.#deps.batch || this.#stopped) return;
      }
    } catch (error) {
      this.#deps.logger.warn({ err: error }, "webhook dispatch failed; retrying at the next poll");
    }
  }

  /**
   * One dispatcher pass: takes up to `limit` undispatched audit entries (SKIP LOCKED, so API
   * processes share the work), queues a delivery for every enabled webhook of the entry's
   * organization that subscribes to its action (a team's webhook: only to that team's entries,
   * docs/api.md "Audit log and webhooks"), and marks the entries dispatched: all in one
   * transaction, so an entry is either fully handed to the queue or still in the outbox.
   * Returns how many entries it took.
   */
  async #dispatch(limit: number, now: Date): Promise<number> {
    // A cheap look first: the outbox is empty most of the time (entries of organizations without
    // webhooks are born dispatched), and an entry here means a webhook exists to deliver to.
    if (!(await new WebhooksRepository(queryOf(this.#deps.db)).hasUndispatched())) return 0;
    // A lazily started job engine must be up before the transaction takes PGlite's only connection.
    await this.#deps.jobs.ready?.();
    return this.#deps.db.transaction(async (query) => {
      const webhooks = new WebhooksRepository(query);
      const entries = await webhooks.takeUndispatched(limit);
      if (entries.length === 0) return 0;
      const hooks = await webhooks.enabledOf([...new Set(entries.map((e) => e.organizationId))]);
      const rows = entries.flatMap((entry) =>
        hooks
          .filter(
            (hook) =>
              hook.organizationId === entry.organizationId &&
              (hook.teamId === null || hook.teamId === entry.teamId) &&
              (hook.events.includes("*") || hook.events.includes(entry.action)),
          )
          .map((hook) => ({
            webhookId: hook.id,
            organizationId: hook.organizationId,
            auditId: entry.id,
            eventType: entry.action,
            body: renderAuditEntry(entry, hook.format),
          })),
      );
      await queueDeliveries(query, this.#deps.jobs, rows, now);
      await webhooks.markDispatched(
        entries.map((e) => e.id),
        now,
      );
      return entries.length;
    });
  }
}
