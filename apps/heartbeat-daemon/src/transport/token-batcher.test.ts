import { describe, expect, it, vi } from "vitest";
import { Batcher } from "./token-batcher.ts";

/** A loader that doubles known keys (below 1000), counting its calls; `gate` holds answers back. */
const loader = () => {
  const calls: number[][] = [];
  const release: Array<() => void> = [];
  let gated = false;
  return {
    calls,
    release,
    gate: (on: boolean) => {
      gated = on;
    },
    load: async (keys: readonly number[]) => {
      calls.push([...keys]);
      if (gated) await new Promise<void>((resolve) => release.push(resolve));
      return new Map(keys.filter((k) => k < 1_000).map((k) => [k, k * 2] as const));
    },
  };
};

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe("Batcher", () => {
  it("loads the keys of one event-loop turn in one call, each key once; a key without a value gets undefined", async () => {
    const l = loader();
    const b = new Batcher({ load: l.load });
    const answers = await Promise.all([b.get(1), b.get(2), b.get(1), b.get(5_000)]);
    expect(answers).toEqual([2, 4, 2, undefined]);
    expect(l.calls).toEqual([[1, 2, 5_000]]);
    const seen: Array<number | undefined> = [];
    b.request(3, (v) => seen.push(v));
    b.request(3);
    await b.get(3);
    expect(seen).toEqual([6]);
    expect(l.calls).toEqual([[1, 2, 5_000], [3]]);
  });

  it("with gatherMs, gathers the keys of many turns into one call", async () => {
    const l = loader();
    vi.useFakeTimers({ toFake: ["setTimeout"] });
    try {
      const b = new Batcher({ load: l.load, gatherMs: 200 });
      const answers: Array<Promise<number | undefined>> = [];
      for (let n = 0; n < 5; n++) {
        answers.push(b.get(n));
        await tick();
      }
      expect(l.calls).toEqual([]);
      await vi.advanceTimersByTimeAsync(200);
      expect(await Promise.all(answers)).toEqual([0, 2, 4, 6, 8]);
      expect(l.calls).toEqual([[0, 1, 2, 3, 4]]);
    } finally {
      vi.useRealTimers();
    }
  });

  it("runs at most maxInFlight batches; keys asked meanwhile gather into the next one", async () => {
    const l = loader();
    l.gate(true);
    const b = new Batcher({ load: l.load, maxInFlight: 2 });
    const answers: Array<Promise<number | undefined>> = [];
    for (let turn = 0; turn < 5; turn++) {
      for (let k = 0; k < 3; k++) answers.push(b.get(turn * 3 + k));
      await tick();
    }
    expect(l.calls.map((c) => c.length)).toEqual([3, 3]);
    expect(b.inFlight).toBe(2);
    l.gate(false);
    for (const release of l.release.splice(0)) release();
    expect(await Promise.all(answers)).toEqual(Array.from({ length: 15 }, (_, n) => n * 2));
    expect(l.calls.map((c) => c.length)).toEqual([3, 3, 9]);
  });

  it("splits a batch into calls of maxBatch keys, one after the other: n keys make one call, n+1 two", async () => {
    for (const count of [4, 5]) {
      const l = loader();
      const b = new Batcher({ load: l.load, maxBatch: 4 });
      await Promise.all(Array.from({ length: count }, (_, n) => b.get(n)));
      expect(l.calls.map((c) => c.length)).toEqual(count > 4 ? [4, 1] : [4]);
    }
  });

  it("a failed call answers undefined to its keys and keeps nothing: the next ask loads again", async () => {
    let fail = true;
    const calls: number[][] = [];
    const b = new Batcher<number, number>({
      load: async (keys) => {
        calls.push([...keys]);
        if (fail) throw new Error("database unreachable");
        return new Map(keys.map((k) => [k, k] as const));
      },
    });
    expect(await Promise.all([b.get(1), b.get(2)])).toEqual([undefined, undefined]);
    fail = false;
    expect(await b.get(1)).toBe(1);
    expect(calls).toEqual([[1, 2], [1]]);
  });

  it("with timer, waits on setTimeout even at gatherMs 0 (background work)", async () => {
    const l = loader();
    vi.useFakeTimers({ toFake: ["setTimeout"] });
    try {
      const b = new Batcher({ load: l.load, timer: true });
      b.request(7);
      await tick();
      expect(l.calls).toEqual([]);
      await vi.runAllTimersAsync();
      expect(l.calls).toEqual([[7]]);
    } finally {
      vi.useRealTimers();
    }
  });
});
