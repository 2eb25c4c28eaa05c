import { describe, expect, it } from "vitest";
import { createTestDatabase, makeUser } from "../testing/index.ts";
import { LIVENESS_ROOM_BYTES } from "./20261128-035-liveness-room.migration.ts";

/** Migration 035 on data written before it: every liveness row gets its room once. */
describe("migration 035: room on the liveness pages", () => {
  it("gives every existing liveness row its room and leaves everything else as it was", async () => {
    const db = await createTestDatabase({ migrateTo: "20261128-034-liveness-token" });
    try {
      const user = await makeUser(db);
      const ids = [crypto.randomUUID(), crypto.randomUUID()];
      for (const id of ids) {
        await db.query(
          `insert into routers (id, organization_id, team_id, name, heartbeat_token_hash, created_at)
           values ($1, $2, $3, 'r', md5($4) || md5($4), now())`,
          [id, user.organizationId, user.teamId, id],
        );
      }
      await db.query(
        "insert into router_liveness (router_id, has_pulse, last_seen_at, facts_digest) values ($1, true, 'epoch', 7), ($2, false, null, null)",
        ids,
      );
      const rows = () =>
        db.query<Record<string, unknown>>(
          "select router_id, has_pulse, last_seen_at is not null as seen, facts_digest::text as digest from router_liveness order by has_pulse desc",
        );
      const before = await rows();

      await db.migrate();

      expect(await rows()).toEqual(before);
      expect(await db.query("select octet_length(room) as bytes from router_liveness group by 1")).toEqual([
        { bytes: LIVENESS_ROOM_BYTES },
      ]);
    } finally {
      await db.close();
    }
  });
});
