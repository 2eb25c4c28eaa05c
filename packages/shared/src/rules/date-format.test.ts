import { describe, expect, it } from "vitest";
import { formatDateTime } from "./date-format.ts";

describe("formatDateTime and its memory of rendered instants", () => {
  it("renders each instant in each zone as it did the first time, never one zone's text for another", () => {
    const at = new Date(Date.UTC(2026, 0, 31, 23, 30, 5, 250));
    for (let i = 0; i < 3; i++) {
      expect(formatDateTime(at)).toBe("2026-01-31 23:30:05");
      expect(formatDateTime(at, "UTC")).toBe("2026-01-31 23:30:05");
      expect(formatDateTime(at, "Europe/Berlin")).toBe("2026-02-01 00:30:05");
      expect(formatDateTime(at, "America/New_York")).toBe("2026-01-31 18:30:05");
      expect(formatDateTime(at, "Not/A_Zone")).toBe("2026-01-31 23:30:05");
    }
    // Another instant of the same second has its own entry (the key is the millisecond).
    expect(formatDateTime(new Date(at.getTime() + 1000), "Europe/Berlin")).toBe("2026-02-01 00:30:06");
    // A Date changed after it was rendered renders its new instant.
    const moving = new Date(at);
    expect(formatDateTime(moving)).toBe("2026-01-31 23:30:05");
    moving.setUTCFullYear(2027);
    expect(formatDateTime(moving)).toBe("2027-01-31 23:30:05");
  });

  it("keeps a bounded memory: thousands of instants still render right", () => {
    const start = Date.UTC(2026, 5, 1);
    for (let i = 0; i < 2500; i++) {
      const date = new Date(start + i * 1000);
      expect(formatDateTime(date)).toBe(date.toISOString().slice(0, 19).replace("T", " "));
    }
    expect(formatDateTime(new Date(start))).toBe("2026-06-01 00:00:00");
  });

  it("refuses an invalid date as before, and remembers nothing for it", () => {
    expect(() => formatDateTime(new Date(Number.NaN))).toThrow(RangeError);
    expect(() => formatDateTime(new Date(Number.NaN))).toThrow(RangeError);
  });
});
