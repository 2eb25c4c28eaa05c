import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createTestDatabase, makeRouter, makeUser } from "../testing/index.ts";

const hex = (text: string) => createHash("sha256").update(Buffer.from(text, "utf8")).digest("hex");

/** Migration 040 on versions written before it: `sha256` becomes the served text's hash. */
describe("migration 040: a backup's sha256 is the hash of the text it serves", () => {
  it("keeps the old comparison hash as normalized_sha256 and hashes the stored text", async () => {
    const db = await createTestDatabase({ migrateTo: "20261128-035-liveness-room" });
    try {
      const router = await makeRouter(db, await makeUser(db));
      const content = "# 2026-11-25 10:50:00 by RouterOS 7.16.2\r\n/system identity\r\nset name=Zürich\r\n";
      const normalized = hex("/system identity\nset name=Zürich\n");
      await db.query(
        `insert into router_config_backups (id, router_id, created_at, checked_at, sha256, bytes, lines, content)
         values (gen_random_uuid(), $1, now(), now(), $2, $3, 3, $4)`,
        [router.id, normalized, Buffer.byteLength(content), content],
      );

      await db.migrate();

      expect(await db.query("select sha256, normalized_sha256 from router_config_backups")).toEqual([
        { sha256: hex(content), normalized_sha256: normalized },
      ]);
    } finally {
      await db.close();
    }
  });
});
