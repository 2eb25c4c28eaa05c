import { describe, expect, it } from "vitest";
import { quietHoursEnd, weeklyOccurrences, zonedToUtc } from "./zoned-time.ts";

describe("zoned time", () => {
  it("maps wall time to UTC across daylight-saving changes (Europe/Paris, 2026)", () => {
    expect(zonedToUtc({ year: 2026, month: 1, day: 15 }, 9 * 60, "Europe/Paris").toISOString()).toBe(
      "2026-01-15T08:00:00.000Z",
    );
    expect(zonedToUtc({ year: 2026, month: 7, day: 15 }, 9 * 60, "Europe/Paris").toISOString()).toBe(
      "2026-07-15T07:00:00.000Z",
    );
    // 02:30 does not exist on 29 March 2026 (02:00 -> 03:00): pushed forward by the gap, 03:30.
    expect(zonedToUtc({ year: 2026, month: 3, day: 29 }, 150, "Europe/Paris").toISOString()).toBe(
      "2026-03-29T01:30:00.000Z",
    );
    // 02:30 happens twice on 25 October 2026: the first.
    expect(zonedToUtc({ year: 2026, month: 10, day: 25 }, 150, "Europe/Paris").toISOString()).toBe(
      "2026-10-25T00:30:00.000Z",
    );
  });

  it("quiet hours spanning midnight end at `to` the next local morning", () => {
    const quiet = { timezone: "America/New_York", from: "22:00", to: "07:00" };
    expect(quietHoursEnd(new Date("2026-12-01T04:00:00Z"), quiet)?.toISOString()).toBe("2026-12-01T12:00:00.000Z");
    expect(quietHoursEnd(new Date("2026-12-01T03:30:00Z"), quiet)?.toISOString()).toBe("2026-12-01T12:00:00.000Z");
    expect(quietHoursEnd(new Date("2026-12-01T15:00:00Z"), quiet)).toBeNull();
    expect(quietHoursEnd(new Date("2026-12-01T15:00:00Z"), { ...quiet, from: "07:00", to: "07:00" })).toBeNull();
  });

  it("a weekly window keeps its wall time when the offset changes", () => {
    const weekly = { timezone: "Europe/Paris", days: ["sat", "sun"] as const, from: "01:00", duration_minutes: 180 };
    const got = weeklyOccurrences(
      { ...weekly, days: [...weekly.days] },
      new Date("2026-03-27T00:00:00Z"),
      new Date("2026-03-30T00:00:00Z"),
    );
    expect(got.map((o) => [o.start.toISOString(), o.end.toISOString()])).toEqual([
      ["2026-03-28T00:00:00.000Z", "2026-03-28T03:00:00.000Z"],
      // Sunday 29 March: 01:00 is still CET (+01:00), 180 real minutes.
      ["2026-03-29T00:00:00.000Z", "2026-03-29T03:00:00.000Z"],
    ]);
    const after = weeklyOccurrences(
      { ...weekly, days: ["sat"] },
      new Date("2026-04-03T00:00:00Z"),
      new Date("2026-04-05T00:00:00Z"),
    );
    expect(after.map((o) => o.start.toISOString())).toEqual(["2026-04-03T23:00:00.000Z"]);
  });
});
