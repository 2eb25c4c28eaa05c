import { describe, expect, it } from "vitest";
import { formatDuration, formatTimeAgo } from "./human-time.ts";

describe("formatDuration", () => {
  it.each([
    [0, "0 seconds"],
    [1, "1 second"],
    [59, "59 seconds"],
    [60, "1 minute"],
    [61, "1 minute"],
    [119, "1 minute"],
    [120, "2 minutes"],
    [3_599, "59 minutes"],
    [3_600, "1 hour"],
    [3_660, "1 hour, 1 minute"],
    [86_399, "23 hours, 59 minutes"],
    [86_400, "1 day"],
    [86_460, "1 day, 1 minute"],
    [3 * 86_400 + 14 * 3_600 + 5 * 60, "3 days, 14 hours, 5 minutes"],
    [400 * 86_400 + 7_200, "400 days, 2 hours"],
  ])("%i seconds -> %s", (seconds, text) => {
    expect(formatDuration(seconds)).toBe(text);
  });

  it("treats negative, fractional and non-finite input sanely", () => {
    expect(formatDuration(-5)).toBe("0 seconds");
    expect(formatDuration(61.9)).toBe("1 minute");
    expect(formatDuration(Number.NaN)).toBe("0 seconds");
  });
});

describe("formatTimeAgo", () => {
  const now = new Date(Date.UTC(2026, 10, 21, 12, 0, 0));
  const ago = (seconds: number) => formatTimeAgo(new Date(now.getTime() - seconds * 1000), now);

  it.each([
    [0, "just now"],
    [0.5, "just now"],
    [-10, "just now"],
    [1, "1 second ago"],
    [59, "59 seconds ago"],
    [60, "1 minute ago"],
    [150, "2 minutes ago"],
    [3_599, "59 minutes ago"],
    [3_600, "1 hour ago"],
    [86_399, "23 hours ago"],
    [86_400, "1 day ago"],
    [7 * 86_400 - 1, "6 days ago"],
    [7 * 86_400, "1 week ago"],
    [30 * 86_400 - 1, "4 weeks ago"],
    [30 * 86_400, "1 month ago"],
    [365 * 86_400 - 1, "12 months ago"],
    [365 * 86_400, "1 year ago"],
    [3 * 365 * 86_400, "3 years ago"],
  ])("%s seconds ago -> %s", (seconds, text) => {
    expect(ago(seconds)).toBe(text);
  });

  it("reads never for a router that never sent a heartbeat", () => {
    expect(formatTimeAgo(null, now)).toBe("never");
  });
});
