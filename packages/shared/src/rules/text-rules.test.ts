import { describe, expect, it } from "vitest";
import { breaksTextRule, findTextRuleViolation, text } from "./text-rules.ts";

describe("text rule", () => {
  it.each([
    ["NUL", "x\u0000"],
    ["U+001F", "a\u001fb"],
    ["DEL", "a\u007f"],
    ["newline in a single-line field", "a\nb"],
    ["tab in a single-line field", "a\tb"],
    ["a lone high surrogate", "a\ud800"],
    ["a lone low surrogate", "\udc00a"],
  ])("refuses %s", (_name, value) => {
    expect(breaksTextRule(value)).toBe(true);
    expect(text({ max: 100 }).safeParse(value).success).toBe(false);
  });

  it.each([
    ["plain ASCII", "Acme GmbH"],
    ["non-ASCII", "Zürich — 東京"],
    ["a surrogate pair (emoji)", "router 🚀"],
    ["U+0080 (a C1 control is allowed)", "a\u0080"],
  ])("accepts %s", (_name, value) => {
    expect(breaksTextRule(value)).toBe(false);
    expect(text({ max: 100 }).safeParse(value).success).toBe(true);
  });

  it("allows tab and newline only in multi-line fields", () => {
    expect(breaksTextRule("a\nb\tc", { multiline: true })).toBe(false);
    expect(breaksTextRule("a\rb", { multiline: true })).toBe(true);
    expect(breaksTextRule("a\u0000b", { multiline: true })).toBe(true);
  });

  it("finds the first violation in free-form input, keys included", () => {
    expect(findTextRuleViolation({ a: "ok", b: { c: ["x", "y\u0000"] } })).toBe("b.c.1");
    expect(findTextRuleViolation({ "k\u0000": 1 })).toBe("k\u0000");
    expect(findTextRuleViolation({ a: 1, b: [true, null, "fine"] })).toBeUndefined();
  });

  it("keeps the length limits at their edges", () => {
    expect(text({ max: 3 }).safeParse("abc").success).toBe(true);
    expect(text({ max: 3 }).safeParse("abcd").success).toBe(false);
  });
});

describe("free-form input nested beyond any call stack", () => {
  const deep = (levels: number, leaf: unknown): unknown => {
    let value = leaf;
    for (let i = 0; i < levels; i++) value = [value];
    return value;
  };

  it("walks 100,000 levels without overflowing and names the path", () => {
    expect(findTextRuleViolation({ m: deep(100_000, "fine") })).toBeUndefined();
    const found = findTextRuleViolation({ m: deep(100_000, "bad\u0000") });
    expect(found?.split(".")).toHaveLength(100_001);
    expect(found?.startsWith("m.0.0.")).toBe(true);
  });

  it("meets keys and values in document order", () => {
    expect(findTextRuleViolation({ a: { "x\u0001": 1 }, "b\u0000": 2 })).toBe("a.x\u0001");
    expect(findTextRuleViolation({ a: ["\u0002"], "b\u0000": 2 })).toBe("a.0");
    expect(findTextRuleViolation("x\u0000", ["meta", "k"])).toBe("meta.k");
  });
});
