import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../testing/index.ts";
import { binaryArray, plainArray, textArray } from "./pg-arrays.ts";

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

describe("binary arrays", () => {
  it("round-trip uuids, float8, int8 and text through the database, nulls and edges included", async () => {
    const ids = [crypto.randomUUID(), "00000000-0000-4000-8000-000000000000", "FFFFFFFF-FFFF-4FFF-BFFF-FFFFFFFFFFFF"];
    const int8 = Buffer.from([0x80, 0, 0, 0, 0, 0, 0, 1]); // the smallest int8 + 1, as a digest is sent
    const rows = await db.query<{ u: string | null; f: number | null; i: string | null; t: string | null }>(
      `select u::text, f, i::text, t
       from unnest($1::uuid[], $2::float8[], $3::bigint[], $4::text[]) with ordinality as x(u, f, i, t, n) order by n`,
      [
        binaryArray("uuid", [...ids, null]),
        binaryArray("float8", [1_795_262_400_123, -0.5, 0, null]),
        binaryArray("int8", [Number.MAX_SAFE_INTEGER, -42, int8, "-9223372036854775808"]),
        binaryArray("text", ["ünïcødé ✓", 'quote " and \\ {x,y}', "", null]),
      ],
    );
    expect(rows).toEqual([
      { u: ids[0], f: 1_795_262_400_123, i: String(Number.MAX_SAFE_INTEGER), t: "ünïcødé ✓" },
      { u: ids[1], f: -0.5, i: "-42", t: 'quote " and \\ {x,y}' },
      { u: ids[2]?.toLowerCase(), f: 0, i: "-9223372036854775807", t: "" },
      { u: null, f: null, i: "-9223372036854775808", t: null },
    ]);
    const empty = await db.query<{ n: number }>("select cardinality($1::uuid[]) as n", [binaryArray("uuid", [])]);
    expect(empty).toEqual([{ n: 0 }]);
  });

  it("round-trips float4 and timestamptz (Unix ms), nulls and times before 2000 included", async () => {
    const times = [Date.UTC(2026, 10, 30, 12, 0, 0, 123), Date.UTC(1999, 11, 31, 23, 59, 59, 1), null];
    const rows = await db.query<{ r: number | null; ms: number | null }>(
      `select r::float8 as r, (extract(epoch from t) * 1000)::float8 as ms
       from unnest($1::real[], $2::timestamptz[]) with ordinality as x(r, t, n) order by n`,
      [binaryArray("float4", [12.5, -0.25, null]), binaryArray("timestamptz", times)],
    );
    expect(rows).toEqual([
      { r: 12.5, ms: times[0] },
      { r: -0.25, ms: times[1] },
      { r: null, ms: null },
    ]);
    expect(() => binaryArray("float4", [Number.NaN])).toThrow(RangeError);
    expect(() => binaryArray("timestamptz", [1.5])).toThrow(RangeError);
  });

  it("refuses what is not of the element type before anything is sent", () => {
    expect(() => binaryArray("uuid", ["not-a-uuid"])).toThrow(RangeError);
    expect(() => binaryArray("uuid", ["0000000-00000-4000-8000-000000000000"])).toThrow(RangeError); // 36 chars, a dash moved
    expect(() => binaryArray("uuid", ["g0000000-0000-4000-8000-000000000000"])).toThrow(RangeError);
    expect(() => binaryArray("float8", [Number.POSITIVE_INFINITY])).toThrow(RangeError);
    expect(() => binaryArray("int8", [1.5])).toThrow(RangeError);
    expect(() => binaryArray("int8", [Buffer.alloc(4)])).toThrow(RangeError);
  });
});
