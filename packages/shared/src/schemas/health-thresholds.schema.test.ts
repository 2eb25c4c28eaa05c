import { describe, expect, it } from "vitest";
import {
  HEALTH_THRESHOLD_LIMITS,
  ZHealthThresholdsBody,
  ZRouterHealthThresholdsInput,
} from "./health-thresholds.schema.ts";

// docs/api.md "Health thresholds": hostile PUT bodies (issue 38) are refused naming the field.
const refusedAt = (body: unknown) => {
  const result = ZHealthThresholdsBody.safeParse(body);
  expect(result.success, JSON.stringify(body)).toBe(false);
  return result.error?.issues.map((issue) => issue.path.map(String).join("."));
};
const accepted = (body: unknown) => {
  const result = ZHealthThresholdsBody.safeParse(body);
  expect(result.success, JSON.stringify(result.error?.issues)).toBe(true);
  return result.data;
};

describe("health threshold bodies under attack", () => {
  it("refuses NaN, infinities, strings, booleans, negative or fractional for_seconds, 86401, above 100", () => {
    const { max } = HEALTH_THRESHOLD_LIMITS.forSeconds;
    for (const [threshold, field] of [
      [{ above: Number.NaN, for_seconds: 0 }, "cpu.above"],
      [{ above: Number.POSITIVE_INFINITY, for_seconds: 0 }, "cpu.above"],
      [{ above: Number.NEGATIVE_INFINITY, for_seconds: 0 }, "cpu.above"],
      [{ above: "NaN", for_seconds: 0 }, "cpu.above"],
      [{ above: "90", for_seconds: 0 }, "cpu.above"],
      [{ above: " 90", for_seconds: 0 }, "cpu.above"],
      [{ above: "0x5A", for_seconds: 0 }, "cpu.above"],
      [{ above: true, for_seconds: 0 }, "cpu.above"],
      [{ above: [90], for_seconds: 0 }, "cpu.above"],
      [{ above: null, for_seconds: 0 }, "cpu.above"],
      [{ above: 100.000001, for_seconds: 0 }, "cpu.above"],
      [{ above: 101, for_seconds: 0 }, "cpu.above"],
      [{ above: -0.000001, for_seconds: 0 }, "cpu.above"],
      [{ above: 90, for_seconds: -1 }, "cpu.for_seconds"],
      [{ above: 90, for_seconds: max + 1 }, "cpu.for_seconds"],
      [{ above: 90, for_seconds: 0.5 }, "cpu.for_seconds"],
      [{ above: 90, for_seconds: Number.NaN }, "cpu.for_seconds"],
      [{ above: 90, for_seconds: "600" }, "cpu.for_seconds"],
      [{ above: 90, for_seconds: null }, "cpu.for_seconds"],
      [{ above: 90 }, "cpu.for_seconds"],
      [{ for_seconds: 0 }, "cpu.above"],
      [{}, "cpu.above"],
      [{ above: 90, for_seconds: 0, extra: 1 }, "cpu"],
      [[90, 0], "cpu"],
      ["90", "cpu"],
      [0, "cpu"],
    ] as Array<[unknown, string]>) {
      expect(refusedAt({ cpu: threshold }), JSON.stringify(threshold)).toContain(field);
    }
  });

  it("takes every limit at n and refuses n + 1, each measure under its own range", () => {
    const { max } = HEALTH_THRESHOLD_LIMITS.forSeconds;
    expect(accepted({ cpu: { above: 100, for_seconds: max } })?.cpu).toEqual({ above: 100, for_seconds: max });
    expect(accepted({ disk: { above: 0, for_seconds: 0 } })?.disk).toEqual({ above: 0, for_seconds: 0 });
    expect(accepted({ temperature: { above: -40, for_seconds: 0 } })?.temperature?.above).toBe(-40);
    expect(accepted({ temperature: { above: 150, for_seconds: 0 } })?.temperature?.above).toBe(150);
    expect(refusedAt({ temperature: { above: -41, for_seconds: 0 } })).toEqual(["temperature.above"]);
    expect(refusedAt({ temperature: { above: 151, for_seconds: 0 } })).toEqual(["temperature.above"]);
    for (const measure of ["memory", "disk", "ping_loss"]) {
      expect(refusedAt({ [measure]: { above: 100.5, for_seconds: 0 } })).toEqual([`${measure}.above`]);
    }
  });

  it("null stops watching a measure, an unknown measure is ignored, and a body that is not an object is refused", () => {
    expect(accepted({ cpu: null, memory: null, disk: null, temperature: null, ping_loss: null })).toEqual({
      cpu: null,
      memory: null,
      disk: null,
      temperature: null,
      ping_loss: null,
    });
    // Ignored, never stored: the answer names only the five measures.
    expect(accepted({ voltage: { above: 30, for_seconds: 0 } })).toEqual({});
    // As a JSON body arrives: "__proto__" an own key, not a prototype that would lend "cpu".
    expect(accepted(JSON.parse('{"__proto__": {"cpu": null}}'))).toEqual({});
    expect(accepted({ constructor: { above: 1, for_seconds: 1 } })).toEqual({});
    for (const body of [null, [], "cpu", 42, true]) expect(refusedAt(body), JSON.stringify(body)).toEqual([""]);
  });

  it("the router form takes its id from the path, whatever the body says", () => {
    const result = ZRouterHealthThresholdsInput.safeParse({ id: "path-id", cpu: null });
    expect(result.data).toEqual({ router_id: "path-id", cpu: null });
    expect(ZRouterHealthThresholdsInput.safeParse({ router_id: "a\u0000", cpu: null }).success).toBe(false);
    expect(ZRouterHealthThresholdsInput.safeParse(null).success).toBe(false);
  });
});
