import { MemoryStatusFeed } from "@fleet/shared";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { BeatWatcher } from "./beat-watcher.ts";

const ROUTER = "6f1c1d3e-7a52-4c1e-9d0b-2f4b8f0a1c11";

describe('BeatWatcher with the daemons\' signals (docs/routeros.md "The guard")', () => {
  it("announces the awaited router and goes on at its signalled heartbeat, not one from before the wait", async () => {
    const feed = new MemoryStatusFeed();
    const announced: string[] = [];
    feed.onSignal("change.awaiting", (id) => announced.push(id));
    const watcher = new BeatWatcher({
      // The backstop read never sees the heartbeat: only the signal can end the wait early.
      lastSeen: async () => new Map(),
      checkMs: 50,
      logger: pino({ level: "silent" }),
      feed,
    });
    const waited = watcher.wait(ROUTER, 1_000, 60_000);
    let settled: boolean | undefined;
    void waited.then((beat) => {
      settled = beat;
    });
    await new Promise<void>((resolve) => setImmediate(resolve));
    expect(announced).toEqual([ROUTER]);

    await feed.signal("router.beat", [`${ROUTER}@1000`, "not-a-beat", `${ROUTER}@x`]);
    await new Promise<void>((resolve) => setImmediate(resolve));
    expect(settled).toBeUndefined();
    await feed.signal("router.beat", [`${ROUTER}@1001`]);
    expect(await waited).toBe(true);
    watcher.close();
    // Closed: no longer listening.
    await expect(watcher.wait(ROUTER, 0, 60_000)).resolves.toBe(false);
  });
});
