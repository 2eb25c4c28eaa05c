import { describe, expect, it } from "vitest";
import { errorSummary, isRowRefusal } from "./row-refusal.ts";

const pgError = (code: string) => Object.assign(new Error(`sqlstate ${code}`), { code });

describe("isRowRefusal", () => {
  it.each([
    ["22P05 (\\u0000 in jsonb)", pgError("22P05"), true],
    ["22003 (number out of range)", pgError("22003"), true],
    ["23505 (unique violation)", pgError("23505"), true],
    ["54000 (index row too big)", pgError("54000"), true],
    ["RangeError (not a finite number)", new RangeError("not a finite number"), true],
    ["08006 (connection failure)", pgError("08006"), false],
    ["57P01 (admin shutdown)", pgError("57P01"), false],
    ["40001 (serialization failure)", pgError("40001"), false],
    ["ECONNREFUSED", pgError("ECONNREFUSED"), false],
    ["no code", new Error("Connection terminated unexpectedly"), false],
  ])("%s -> %s", (_name, error, expected) => {
    expect(isRowRefusal(error)).toBe(expected);
  });

  it("summarizes without a stack and bounds the reason", () => {
    const summary = errorSummary(pgError("22P05"));
    expect(summary).toEqual({ code: "22P05", reason: "sqlstate 22P05" });
    expect(errorSummary(new Error("x".repeat(1_000))).reason).toHaveLength(300);
  });
});
