import { describe, expect, it } from "vitest";
import { HealthSeriesRepository } from "../repositories/health-series.repository.ts";
import { createTestDatabase, makeRouter, makeUser } from "../testing/index.ts";

/** Migration 161 on data written before it: each router's interface rows become its one row. */
describe("migration 161: the latest interface states as one row per router", () => {
  it("keeps every interface's state, counters and rates", async () => {
    const db = await createTestDatabase({ migrateTo: "20261201-160-health-staging" });
    try {
      const user = await makeUser(db);
      const router = await makeRouter(db, user);
      await db.query(
        `insert into router_interfaces_latest (router_id, name, reported_at, running, rx_bytes, tx_bytes, rx_errors, tx_errors, rx_bps, tx_bps)
         values ($1, 'ether1', '2026-11-30T12:00:00Z', true, 1000, 2000, 1, 2, 800.5, null),
                ($1, 'wg0', '2026-11-30T12:00:30Z', false, null, 5, null, 0, null, 16)`,
        [router.id],
      );

      await db.migrate();

      expect(await new HealthSeriesRepository(db).interfaces(router.id)).toEqual([
        {
          routerId: router.id,
          name: "ether1",
          reportedAt: new Date("2026-11-30T12:00:00Z"),
          running: true,
          rxBytes: 1000,
          txBytes: 2000,
          rxErrors: 1,
          txErrors: 2,
          rxBps: 800.5,
          txBps: null,
        },
        {
          routerId: router.id,
          name: "wg0",
          reportedAt: new Date("2026-11-30T12:00:30Z"),
          running: false,
          rxBytes: null,
          txBytes: 5,
          rxErrors: null,
          txErrors: 0,
          rxBps: null,
          txBps: 16,
        },
      ]);
    } finally {
      await db.close();
    }
  });
});
