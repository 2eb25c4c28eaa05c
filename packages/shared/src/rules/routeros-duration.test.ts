import { describe, expect, it } from "vitest";
import {
  parseDecimalText,
  parseRouterOsBoolean,
  parseRouterOsDuration,
  parseUptimeSeconds,
} from "./routeros-duration.ts";

const W = 604_800;
const D = 86_400;

describe("parseRouterOsDuration", () => {
  it.each([
    ["0s", 0],
    ["1s", 1],
    ["23:59:59", 23 * 3_600 + 59 * 60 + 59],
    ["00:05:00", 300],
    ["00:00:00", 0],
    ["3d14:05:00", 3 * D + 14 * 3_600 + 5 * 60],
    ["1w2d03:04:05", W + 2 * D + 3 * 3_600 + 4 * 60 + 5],
    ["1w", W],
    ["52w3d", 52 * W + 3 * D],
    ["1d", D],
    ["5m10s", 310],
    ["1w2d3h4m5s", W + 2 * D + 3 * 3_600 + 4 * 60 + 5],
    ["2h", 7_200],
    ["150ms", 0.15],
    ["1s500ms", 1.5],
    ["100:00:00", 360_000],
    ["00:00:01.5", 1.5],
    ["1d00:00:00.250", D + 0.25],
  ])("%s is %d seconds", (text, seconds) => {
    expect(parseRouterOsDuration(text)).toBeCloseTo(seconds, 6);
  });

  it.each([
    "",
    "12",
    "s",
    "1",
    "1x",
    "1d2",
    "2d1w",
    "1w1w",
    "1m1h",
    "-1s",
    "1 d",
    " 1d",
    "1d ",
    "1.5d",
    "00:60:00",
    "00:00:60",
    "0:5:00",
    "00:05",
    "00:05:00:00",
    "1h00:05:00",
    "00:05:00.",
    "00:05:00x",
    "1ms1s",
    ":00:00",
    "1d:00:00",
    "NaN",
    "1e3s",
    `${"1".repeat(70)}s`,
  ])("refuses %j", (text) => {
    expect(parseRouterOsDuration(text)).toBeNull();
  });
});

describe("parseUptimeSeconds", () => {
  it.each<[unknown, number]>([
    [0, 0],
    [12, 12],
    [12.5, 12.5],
    ["12", 12],
    ["12.000000", 12],
    ["0", 0],
    ["1w2d03:04:05", W + 2 * D + 11_045],
    ["0s", 0],
  ])("%j -> %d", (value, seconds) => {
    expect(parseUptimeSeconds(value)).toBeCloseTo(seconds, 6);
  });

  it.each<unknown>([
    -1,
    Number.NaN,
    Number.POSITIVE_INFINITY,
    "-1",
    "1e3",
    "0x10",
    " 12",
    "12 ",
    "",
    ".5",
    "5.",
    true,
    {},
    [],
    "x",
  ])("refuses %j", (value) => {
    expect(parseUptimeSeconds(value)).toBeNull();
  });
});

describe("parseDecimalText", () => {
  it("reads digits with an optional fraction and nothing else", () => {
    expect(parseDecimalText("1234.000000")).toBe(1234);
    expect(parseDecimalText("7")).toBe(7);
    expect(parseDecimalText("7.")).toBeNull();
    expect(parseDecimalText("+7")).toBeNull();
  });
});

describe("parseRouterOsBoolean", () => {
  it.each<[unknown, boolean | null]>([
    [true, true],
    [false, false],
    ["true", true],
    ["false", false],
    ["yes", true],
    ["no", false],
    ["YES", true],
    ["False", false],
    ["1", null],
    ["", null],
    ["maybe", null],
    [1, null],
    [null, null],
  ])("%j -> %j", (value, result) => {
    expect(parseRouterOsBoolean(value)).toBe(result);
  });
});
