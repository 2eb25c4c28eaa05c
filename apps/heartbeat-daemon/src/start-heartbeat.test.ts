import { createServer } from "node:net";
import { acquireStatusFeed } from "@fleet/db";
import { createTestDatabase, type TestDatabase } from "@fleet/db/testing";
import { ManualClock } from "@fleet/shared";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadHeartbeatConfig, startHeartbeat } from "./start-heartbeat.ts";

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.close();
});

describe("heartbeat daemon start-up", () => {
  it("a failed start closes what was already wired: its share of the status feed", async () => {
    // The port is taken, so the server fails after the feed, the token cache and the writer exist.
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    const address = taken.address();
    if (address === null || typeof address === "string") throw new Error("no port");
    // The test's own share keeps the feed alive while the daemon starts, so the feed it gets is this one.
    const held = await acquireStatusFeed(db);
    try {
      const config = loadHeartbeatConfig({
        HOST: "127.0.0.1",
        HEARTBEAT_PORT: String(address.port),
        DATA_DIR: "memory",
        LOG_LEVEL: "silent",
      });
      await expect(
        startHeartbeat({ config, db, logger: pino({ level: "silent" }), clock: new ManualClock() }),
      ).rejects.toThrow(/EADDRINUSE/);
    } finally {
      await held.release();
      await new Promise((resolve) => taken.close(resolve));
    }
    // Released by every holder, the feed is gone: the next holder gets a new one. A daemon that kept
    // its share would keep the old feed (and its listeners) alive.
    const next = await acquireStatusFeed(db);
    try {
      expect(next.feed).not.toBe(held.feed);
    } finally {
      await next.release();
    }
  });
});
