import { describe, expect, it } from "vitest";
import { compiledStatement } from "./compiled-statement.ts";
import { queryOf } from "./database.ts";
import { createTestDatabase } from "./testing/index.ts";

describe("compiledStatement", () => {
  const byName = compiledStatement((kysely, name: string, limit: number) =>
    kysely
      .selectFrom("organizations")
      .select(["id", "name", "created_at"])
      .where("name", "=", name)
      .orderBy("id")
      .limit(limit),
  );

  it("runs with each call's values, converting results as the entities declare", async () => {
    const db = await createTestDatabase();
    try {
      const insert = "insert into organizations (id, name, parent_id, created_at) values ($1, $2, null, now())";
      const [a, b, c] = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
      await db.query(insert, [a, "first"]);
      await db.query(insert, [b, "second"]);
      await db.query(insert, [c, "second"]);
      const query = queryOf(db);
      expect((await byName(query, "first", 10)).map((row) => row.id)).toEqual([a]);
      expect((await byName(query, "second", 10)).map((row) => row.id)).toEqual([b, c].sort());
      expect(await byName(query, "second", 1)).toHaveLength(1);
      expect(await byName(query, "nobody", 10)).toEqual([]);
      const [first] = await byName(query, "first", 1);
      expect(first?.created_at).toBeInstanceOf(Date);
    } finally {
      await db.close();
    }
  });

  it("runs on the handle it is given, inside its transaction", async () => {
    const db = await createTestDatabase();
    try {
      const id = crypto.randomUUID();
      const seen = await db.transaction(async (query) => {
        await query("insert into organizations (id, name, parent_id, created_at) values ($1, 'inside', null, now())", [
          id,
        ]);
        return byName(query, "inside", 10);
      });
      expect(seen.map((row) => row.id)).toEqual([id]);
    } finally {
      await db.close();
    }
  });

  it("refuses a statement that does not bind each value as a parameter", async () => {
    const db = await createTestDatabase();
    try {
      const unused = compiledStatement((kysely, _name: string) => kysely.selectFrom("organizations").select("id"));
      await expect(unused(queryOf(db), "x")).rejects.toThrow("each value must be a bound parameter");
    } finally {
      await db.close();
    }
  });
});
