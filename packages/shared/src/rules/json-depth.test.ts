import { describe, expect, it } from "vitest";
import { findDepthViolation, MAX_JSON_DEPTH, opensAtMost } from "./json-depth.ts";

/** `levels` objects and arrays nested, the root included. */
const nested = (levels: number): unknown => {
  let value: unknown = 1;
  for (let i = 0; i < levels; i++) value = i % 2 === 0 ? [value] : { k: value };
  return value;
};

describe("findDepthViolation", () => {
  it("accepts 32 levels and names the field at 33 (objects and arrays together)", () => {
    expect(MAX_JSON_DEPTH).toBe(32);
    expect(findDepthViolation({ a: nested(MAX_JSON_DEPTH - 1), b: "x" })).toBeUndefined();
    expect(findDepthViolation({ b: "x", a: nested(MAX_JSON_DEPTH) })).toEqual(["a"]);
    expect(findDepthViolation(nested(MAX_JSON_DEPTH))).toBeUndefined();
    expect(findDepthViolation(nested(MAX_JSON_DEPTH + 1))).toEqual(expect.any(Array));
  });

  it("names no field when the root is an array", () => {
    expect(findDepthViolation([nested(MAX_JSON_DEPTH)])).toEqual([]);
  });

  it("walks 1,000,000 levels without overflowing the stack", () => {
    expect(findDepthViolation({ metadata: nested(1_000_000) })).toEqual(["metadata"]);
  });

  it("passes scalars and flat objects", () => {
    expect(findDepthViolation("x")).toBeUndefined();
    expect(findDepthViolation(null)).toBeUndefined();
    expect(findDepthViolation({ type: "heartbeat", uptime: 3 })).toBeUndefined();
  });
});

describe("opensAtMost, the text's bound on the walk", () => {
  it("counts both brackets, in strings too, at the limit and one past it", () => {
    const text = (levels: number) => JSON.stringify(nested(levels));
    expect(opensAtMost(text(MAX_JSON_DEPTH), MAX_JSON_DEPTH)).toBe(true);
    expect(opensAtMost(text(MAX_JSON_DEPTH + 1), MAX_JSON_DEPTH)).toBe(false);
    // Side by side, not nested: still counted (a bound, so the walk decides).
    expect(opensAtMost(JSON.stringify({ a: [1], b: [2] }), 2)).toBe(false);
    expect(opensAtMost(JSON.stringify({ a: "{[" }), 1)).toBe(false);
    expect(opensAtMost(JSON.stringify({ a: "x" }), 1)).toBe(true);
  });

  it("is never true for a text that nests deeper than the bound", () => {
    for (let levels = 0; levels <= 40; levels++)
      if (opensAtMost(JSON.stringify({ v: nested(levels) }), MAX_JSON_DEPTH))
        expect(findDepthViolation({ v: nested(levels) })).toBeUndefined();
  });
});
