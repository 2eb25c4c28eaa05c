import { describe, expect, it } from "vitest";
import { timeToExpire } from "./time-to-expire.ts";

const now = new Date("2026-11-21T12:00:00Z");
const after = (ms: number) => new Date(now.getTime() + ms);

describe("timeToExpire", () => {
  it.each([
    [60 * 60_000 - 1000, "59 minutes from now"],
    [60 * 60_000, "1 hour from now"],
    [2 * 60 * 60_000 + 59 * 60_000, "2 hours from now"],
    [24 * 60 * 60_000, "1 day from now"],
    [24 * 60 * 60_000 - 1, "23 hours from now"],
    [10 * 60_000, "10 minutes from now"],
    [60_000, "1 minute from now"],
    [59_999, "59 seconds from now"],
    [1000, "1 second from now"],
    [1, "1 second from now"],
    [0, "expired"],
    [-1, "expired"],
    [-3_600_000, "expired"],
  ])("%d ms left reads %j", (ms, text) => {
    expect(timeToExpire(after(ms), now)).toBe(text);
  });
});
