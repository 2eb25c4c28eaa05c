import type { Clock } from "../contracts/clock.ts";

/**
 * Real time moved by `offsetMs`: for tests whose time must keep running against real timers and
 * peers (token expiry, rate-limit windows, the Stripe emulator's signatures) but jump on demand.
 */
export class OffsetClock implements Clock {
  offsetMs: number;
  constructor(offsetMs = 0) {
    this.offsetMs = offsetMs;
  }
  now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }
  nowMs(): number {
    return Date.now() + this.offsetMs;
  }
}
