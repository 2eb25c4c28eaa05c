import type { RateLimitHits } from "@fleet/db";
import { ManualClock } from "@fleet/shared";
import { describe, expect, it } from "vitest";
import { type SharedCounterStore, SharedRateLimiter } from "./shared-rate-limit.ts";

/** A store that adds what it is given, as the shared counters table does for one process. */
class Store implements SharedCounterStore {
  readonly totals = new Map<string, number>();
  adds = 0;
  async add(batch: readonly RateLimitHits[]): Promise<Map<string, number>> {
    this.adds++;
    for (const hit of batch) {
      const key = `${hit.bucket}@${hit.windowStartMs}`;
      this.totals.set(key, (this.totals.get(key) ?? 0) + hit.hits);
    }
    return new Map(this.totals);
  }
  async prune(): Promise<void> {}
}

const stored = (store: Store) => [...store.totals.values()].reduce((a, b) => a + b, 0);

const limiter = (limit: number, store = new Store()) =>
  new SharedRateLimiter({ limit, subject: "credential", store, clock: new ManualClock(), flushMs: 60_000 });

describe("SharedRateLimiter.admitNow (a request counted without an await)", () => {
  it("counts what hit would count, and leaves every request it cannot decide alone to hit", async () => {
    const limit = 200;
    const store = new Store();
    const now = limiter(limit, store);
    let admittedNow = 0;
    let admittedByHit = 0;
    let refused = 0;
    for (let i = 0; i < limit + 20; i++) {
      if (now.admitNow("sub:a")) admittedNow++;
      else {
        try {
          await now.hit("sub:a");
          admittedByHit++;
        } catch (error) {
          expect(error).toMatchObject({ code: "rate_limited" });
          refused++;
        }
      }
      // In the last tenth of the limit a request is in the store before it is admitted.
      const admitted = admittedNow + admittedByHit;
      if (admitted > limit * 0.9) expect(stored(store)).toBe(admitted);
    }
    // Exactly the limit is admitted, as by hit alone; the last tenth of it goes through hit
    // (counted in the store first), and so does everything over it.
    expect(admittedNow + admittedByHit).toBe(limit);
    expect(refused).toBe(20);
    expect(admittedByHit).toBeGreaterThanOrEqual(limit * 0.1);
    // Near the limit each request was counted in the store before it was admitted: all of them are there.
    expect(stored(store)).toBe(limit);
    expect(now.isOver("sub:a")).toBe(true);
    expect(now.admitNow("sub:a")).toBe(false);
    // Another credential is not affected.
    expect(now.admitNow("sub:b")).toBe(true);
    await now.close();
  });

  it("answers false, counting nothing, once a flush is due, and hit then shares the counts", async () => {
    const store = new Store();
    const now = limiter(1000, store);
    let admitted = 0;
    while (now.admitNow("sub:a")) admitted++;
    // Unshared counts stay below an eighth of what is left (111 >= floor(889 / 8)); then hit flushes first.
    expect(admitted).toBe(111);
    expect(store.adds).toBe(0);
    await now.hit("sub:a");
    expect(store.adds).toBe(1);
    expect(now.admitNow("sub:a")).toBe(true);
    await now.close();
    expect([...store.totals.values()]).toEqual([admitted + 2]);
  });
});
