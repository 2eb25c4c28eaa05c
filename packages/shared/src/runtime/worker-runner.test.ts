import { describe, expect, it } from "vitest";
import { WorkerBusyError, WorkerRunner, WorkerTimeoutError } from "./worker-runner.ts";

const FIXTURE = new URL("../testing/echo-or-spin.worker.ts", import.meta.url);

describe("WorkerRunner", () => {
  it("answers from a worker thread and passes its failures on", async () => {
    const runner = new WorkerRunner<number | "fail", number>(FIXTURE, {
      timeoutMs: 10_000,
      maxRunning: 1,
      maxWaiting: 4,
    });
    expect(await Promise.all([runner.run(2), runner.run(5)])).toEqual([4, 10]);
    await expect(runner.run("fail")).rejects.toThrow("planted failure");
  });

  it("keeps the event loop free while a run computes", async () => {
    const runner = new WorkerRunner<{ flag: Int32Array }, number>(FIXTURE, {
      timeoutMs: 60_000,
      maxRunning: 1,
      maxWaiting: 1,
    });
    const flag = new Int32Array(new SharedArrayBuffer(4));
    const computing = runner.run({ flag });
    // The worker answers only after this thread, whose loop still turns, tells it to stop.
    await new Promise((resolve) => setImmediate(resolve));
    Atomics.store(flag, 0, 1);
    expect(await computing).toBe(0);
  });

  it("stops a thread at its time limit and frees its slot", async () => {
    // Long enough for a thread to start on a loaded machine: the limit counts from the spawn.
    const runner = new WorkerRunner<number | "spin", number>(FIXTURE, {
      timeoutMs: 3_000,
      maxRunning: 1,
      maxWaiting: 1,
    });
    await expect(runner.run("spin")).rejects.toBeInstanceOf(WorkerTimeoutError);
    expect(await runner.run(1)).toBe(2);
  });

  it("holds maxWaiting runs behind the running ones and refuses one more", async () => {
    const runner = new WorkerRunner<number | "spin", number>(FIXTURE, {
      timeoutMs: 3_000,
      maxRunning: 1,
      maxWaiting: 2,
    });
    const running = runner.run("spin");
    const waiting = [runner.run(1), runner.run(2)];
    await expect(runner.run(3)).rejects.toBeInstanceOf(WorkerBusyError);
    await expect(running).rejects.toBeInstanceOf(WorkerTimeoutError);
    expect(await Promise.all(waiting)).toEqual([2, 4]);
  });
});
