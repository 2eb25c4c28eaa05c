import { afterEach, describe, expect, it, vi } from "vitest";
import { StartQueue } from "./start-queue.ts";

/** A piece of work the test ends by hand. */
const pending = () => {
  let end: () => void = () => {};
  let fail: (error: Error) => void = () => {};
  const done = new Promise<void>((resolve, reject) => {
    end = resolve;
    fail = reject;
  });
  return { done, end, fail };
};

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("StartQueue (issue 39: change steps start a few at a time, first come first served)", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("runs at most `limit` at once, the others in the order they came", async () => {
    const queue = new StartQueue(2, 60_000);
    const started: number[] = [];
    const works = Array.from({ length: 5 }, () => pending());
    const runs = works.map((w, i) =>
      queue.run(async () => {
        started.push(i);
        await w.done;
        return i;
      }),
    );
    await turn();
    expect(started).toEqual([0, 1]);
    expect(queue.waiting).toBe(3);
    works[1]?.end();
    await turn();
    expect(started).toEqual([0, 1, 2]);
    // A failed start frees its slot as well.
    works[0]?.fail(new Error("router refused"));
    await expect(runs[0]).rejects.toThrow("router refused");
    await turn();
    expect(started).toEqual([0, 1, 2, 3]);
    for (const w of works) w.end();
    expect(await Promise.all(runs.slice(1))).toEqual([1, 2, 3, 4]);
    expect(queue.waiting).toBe(0);
    // All slots free again: the next ones start at once.
    const again = await Promise.all([queue.run(async () => "a"), queue.run(async () => "b")]);
    expect(again).toEqual(["a", "b"]);
  });

  it("lets the next one go when a start holds its turn longer than holdMs, and never frees a slot twice", async () => {
    vi.useFakeTimers();
    const queue = new StartQueue(1, 1_000);
    const slow = pending();
    const started: string[] = [];
    const first = queue.run(async () => {
      started.push("slow");
      await slow.done;
    });
    const quick = pending();
    const second = queue.run(async () => {
      started.push("second");
      await quick.done;
    });
    const third = queue.run(async () => {
      started.push("third");
    });
    await vi.advanceTimersByTimeAsync(999);
    expect(started).toEqual(["slow"]);
    await vi.advanceTimersByTimeAsync(1);
    expect(started).toEqual(["slow", "second"]);
    // The slow one ending later hands over nothing: its turn already went.
    slow.end();
    await first;
    await vi.advanceTimersByTimeAsync(0);
    expect(started).toEqual(["slow", "second"]);
    quick.end();
    await second;
    await third;
    expect(started).toEqual(["slow", "second", "third"]);
  });
});
