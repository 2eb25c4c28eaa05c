import { describe, expect, it } from "vitest";
import { createTestDatabase, makeUser } from "../testing/index.ts";

/**
 * Migration 034 on data written before it: each liveness row gets its router's token (the facts'
 * digest starts empty), and from then on the copy follows the router's token in the same transaction.
 */
describe("migration 034: the token in router_liveness", () => {
  it("copies each router's token into its liveness row, leaves the digest empty, and keeps the copy in step", async () => {
    const db = await createTestDatabase({ migrateTo: "20261125-033-liveness-previous" });
    try {
      const user = await makeUser(db);
      const seen = crypto.randomUUID();
      const other = crypto.randomUUID();
      const never = crypto.randomUUID();
      const hash = (n: number) => n.toString(16).padStart(64, "0");
      for (const [n, id] of [seen, other, never].entries()) {
        await db.query(
          `insert into routers (id, organization_id, team_id, name, heartbeat_token_hash, created_at)
           values ($1, $2, $3, 'r', $4, now())`,
          [id, user.organizationId, user.teamId, hash(n + 1)],
        );
      }
      await db.query(
        "insert into router_liveness (router_id, has_pulse, last_seen_at) values ($1, true, now()), ($2, true, now())",
        [seen, other],
      );

      await db.migrate();

      const copies = async () =>
        db.query<{ router_id: string; heartbeat_token_hash: string | null; facts_digest: string | null }>(
          "select router_id, heartbeat_token_hash, facts_digest::text from router_liveness order by heartbeat_token_hash",
        );
      expect(await copies()).toEqual([
        { router_id: seen, heartbeat_token_hash: hash(1), facts_digest: null },
        { router_id: other, heartbeat_token_hash: hash(2), facts_digest: null },
      ]);

      // A new token (a re-adoption) reaches the copy in the same statement; other routers keep theirs,
      // and a router that never beat gets no liveness row from it.
      await db.query("update routers set heartbeat_token_hash = $2 where id = $1", [seen, hash(10)]);
      await db.query("update routers set heartbeat_token_hash = $2 where id = $1", [never, hash(11)]);
      // A write of the reported facts (the flush's) leaves the copy alone.
      await db.query("update routers set identity = 'gw' where id = $1", [other]);
      expect(await copies()).toEqual([
        { router_id: other, heartbeat_token_hash: hash(2), facts_digest: null },
        { router_id: seen, heartbeat_token_hash: hash(10), facts_digest: null },
      ]);
      // In the transaction that changes the token: a rollback leaves both as they were.
      await expect(
        db.transaction(async (query) => {
          await query("update routers set heartbeat_token_hash = $2 where id = $1", [other, hash(12)]);
          throw new Error("abort");
        }),
      ).rejects.toThrow("abort");
      expect((await copies())[0]).toEqual({ router_id: other, heartbeat_token_hash: hash(2), facts_digest: null });
    } finally {
      await db.close();
    }
  });
});
