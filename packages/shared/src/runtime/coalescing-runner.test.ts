import { describe, expect, it } from "vitest";
import { coalescingRunner } from "./coalescing-runner.ts";

describe("coalescingRunner", () => {
  it("runs one pass at a time and folds a burst of calls into one more pass", async () => {
    let passes = 0;
    let active = 0;
    let maxActive = 0;
    const releases: Array<() => void> = [];
    const runner = coalescingRunner(async () => {
      passes++;
      active++;
      maxActive = Math.max(maxActive, active);
      await new Promise<void>((resolve) => releases.push(resolve));
      active--;
    });
    // One macrotask turn: every promise callback queued so far has run (no time passes).
    const settle = () => new Promise((r) => setImmediate(r));
    const first = runner.run();
    // Calls before the pass has started are covered by it; calls during it ask for one more.
    expect(runner.run()).toBe(first);
    await settle();
    expect(passes).toBe(1);
    const joined = [runner.run(), runner.run(), runner.run()];
    expect(joined.every((p) => p === first)).toBe(true);
    expect(runner.current()).toBe(first);
    releases.shift()?.();
    await settle();
    expect(passes).toBe(2);
    releases.shift()?.();
    await first;
    expect(passes).toBe(2);
    expect(maxActive).toBe(1);
    expect(runner.current()).toBeUndefined();
  });

  it("does not repeat a requested pass when the condition says there is nothing left", async () => {
    let passes = 0;
    const runner = coalescingRunner(
      async () => {
        passes++;
        void runner.run();
      },
      () => false,
    );
    await runner.run();
    expect(passes).toBe(1);
  });

  it("frees itself after a failed pass", async () => {
    let passes = 0;
    const runner = coalescingRunner(async () => {
      passes++;
      if (passes === 1) throw new Error("boom");
    });
    await expect(runner.run()).rejects.toThrow("boom");
    expect(runner.current()).toBeUndefined();
    await runner.run();
    expect(passes).toBe(2);
  });
});
