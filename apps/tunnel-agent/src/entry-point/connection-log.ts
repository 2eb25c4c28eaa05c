import type { ForwardConnectionEvent } from "@fleet/db";
import { type Clock, coalescingRunner } from "@fleet/shared";
import type { Logger } from "pino";

/** What the relay reports about its connections (docs/api.md "Audit log and webhooks"). */
export interface RelayConnectionEvents {
  /** A connection let through has ended: bytes from the client (in) and to it (out). */
  accepted(event: { forwardId: string; sourceIp: string; bytesIn: number; bytesOut: number; durationMs: number }): void;
  /** A client was refused (source outside `allow_only_cidr`, or no usable PROXY header). */
  denied(event: { forwardId: string; sourceIp: string | undefined; reason: string }): void;
}

export interface ConnectionLogOptions {
  store: { recordForwardEvents(events: readonly ForwardConnectionEvent[]): Promise<void> };
  clock: Clock;
  logger: Logger;
  /** How long events wait to be written together. */
  flushIntervalMs?: number;
  /** Events kept while the database is slow or away; beyond it the oldest are dropped (and counted). */
  maxBuffered?: number;
}

/**
 * The relay's audit entries, written in batches: the relay only pushes onto an array, so a slow or
 * unreachable database never holds a connection or a byte. One INSERT ... SELECT FROM UNNEST per
 * flush; the organization and router come from the forward in SQL.
 */
export class ConnectionLog implements RelayConnectionEvents {
  readonly #o: Required<ConnectionLogOptions>;
  #buffer: ForwardConnectionEvent[] = [];
  #dropped = 0;
  readonly #timer: NodeJS.Timeout;
  readonly #runner = coalescingRunner(() => this.#flush());

  constructor(options: ConnectionLogOptions) {
    this.#o = { flushIntervalMs: 1_000, maxBuffered: 50_000, ...options };
    this.#timer = setInterval(() => void this.#runner.run(), this.#o.flushIntervalMs);
    this.#timer.unref();
  }

  accepted(event: {
    forwardId: string;
    sourceIp: string;
    bytesIn: number;
    bytesOut: number;
    durationMs: number;
  }): void {
    this.#push({
      forwardId: event.forwardId,
      occurredAt: this.#o.clock.now(),
      action: "forward.connection.accepted",
      sourceIp: event.sourceIp,
      details: {
        source_ip: event.sourceIp,
        bytes_in: event.bytesIn,
        bytes_out: event.bytesOut,
        duration_s: Math.round(event.durationMs) / 1000,
      },
    });
  }

  denied(event: { forwardId: string; sourceIp: string | undefined; reason: string }): void {
    this.#push({
      forwardId: event.forwardId,
      occurredAt: this.#o.clock.now(),
      action: "forward.connection.denied",
      sourceIp: event.sourceIp ?? null,
      details: { source_ip: event.sourceIp ?? null, reason: event.reason },
    });
  }

  /** Writes what is buffered now (tests, shutdown). */
  flush(): Promise<void> {
    return this.#runner.run();
  }

  async close(): Promise<void> {
    clearInterval(this.#timer);
    await this.#runner.run();
  }

  #push(event: ForwardConnectionEvent): void {
    if (this.#buffer.length >= this.#o.maxBuffered) {
      this.#buffer.shift();
      this.#dropped++;
    }
    this.#buffer.push(event);
  }

  async #flush(): Promise<void> {
    if (this.#buffer.length === 0) return;
    const batch = this.#buffer;
    this.#buffer = [];
    try {
      await this.#o.store.recordForwardEvents(batch);
      if (this.#dropped > 0) {
        this.#o.logger.warn({ dropped: this.#dropped }, "relay audit entries dropped while the database was away");
        this.#dropped = 0;
      }
    } catch (error) {
      // Put them back in front, so the next flush retries them (still bounded by maxBuffered).
      this.#buffer = [...batch, ...this.#buffer].slice(-this.#o.maxBuffered);
      this.#o.logger.warn({ err: error, pending: this.#buffer.length }, "relay audit entries not written; retrying");
    }
  }
}
