import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../testing/index.ts";
import { plainArray, textArray } from "./pg-arrays.ts";

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.close();
});

describe("array literals", () => {
  it("round-trip every awkward text value through PostgreSQL", async () => {
    const values = [
      "plain",
      "",
      "NULL",
      'quote " inside',
      "back\\slash",
      "{braces},commas",
      " spaced ",
      "new\nline",
      "ünïcødé ✓",
      "'single'",
      null,
    ];
    const rows = await db.query<{ v: string | null }>(
      "select v from unnest($1::text[]) with ordinality as t(v, n) order by n",
      [textArray(values)],
    );
    expect(rows.map((r) => r.v)).toEqual(values);
  });

  it("round-trip numbers, booleans and uuids", async () => {
    const id = crypto.randomUUID();
    const rows = await db.query<{ a: string; f: number; b: boolean | null }>(
      "select a::text, f, b from unnest($1::uuid[], $2::float8[], $3::boolean[]) as t(a, f, b)",
      [plainArray([id, id]), plainArray([1_795_262_400_123, 0.5]), plainArray([true, null])],
    );
    expect(rows).toEqual([
      { a: id, f: 1_795_262_400_123, b: true },
      { a: id, f: 0.5, b: null },
    ]);
  });

  it("refuses what would need quoting in a plain array", () => {
    expect(() => plainArray(["a,b"])).toThrow(RangeError);
    expect(() => plainArray([Number.NaN])).toThrow(RangeError);
    expect(plainArray([])).toBe("{}");
  });
});
