import type { WebhooksRepository } from "@fleet/db";
import { type Clock, coalescingRunner } from "@fleet/shared";
import type { Logger } from "pino";
import { renderAuditEntry } from "./webhooks.mapper.ts";

export interface WebhookDispatcherDeps {
  webhooks: Pick<WebhooksRepository, "dispatch" | "anyEnabled">;
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
      if (!this.#deps.runtime.started && (await this.#deps.webhooks.anyEnabled())) await this.#deps.runtime.ensure();
      for (;;) {
        const taken = await this.#deps.webhooks.dispatch(this.#deps.batch, this.#deps.clock.now(), renderAuditEntry);
        if (taken > 0) this.#deps.onQueued();
        if (taken < this.#deps.batch || this.#stopped) return;
      }
    } catch (error) {
      this.#deps.logger.warn({ err: error }, "webhook dispatch failed; retrying at the next poll");
    }
  }
}
