import { describe, expect, it } from "vitest";
import {
  coverageOnStart,
  downtimeBetween,
  effectiveLastSeen,
  FAULT_CAUSE_CONNECTIVITY,
  FAULT_CAUSE_REBOOT,
  FAULT_CAUSE_UNKNOWN,
  faultDurationSeconds,
  faultOpensAt,
  faultStartsAt,
  hourlyMetrics,
  inferFaultCause,
  round2,
  siteOfflineMessage,
  splitByUtcHour,
} from "./router-health.ts";

const at = (iso: string) => new Date(iso);
const I = 30_000;

describe("downtimeBetween (jitter rule)", () => {
  const last = at("2026-11-21T12:00:00Z");
  it("on time up to one and a half intervals", () => {
    expect(downtimeBetween(last, new Date(last.getTime() + I), I)).toBeNull();
    expect(downtimeBetween(last, new Date(last.getTime() + 45_000), I)).toBeNull();
  });
  it("a longer gap is down from the first missed heartbeat until the next heartbeat", () => {
    const next = new Date(last.getTime() + 45_001);
    expect(downtimeBetween(last, next, I)).toEqual({ from: at("2026-11-21T12:00:30Z"), to: next });
  });
});

describe("splitByUtcHour", () => {
  it("splits at hour boundaries", () => {
    const parts = splitByUtcHour({ from: at("2026-11-21T12:50:00Z"), to: at("2026-11-21T14:10:00Z") });
    expect(parts).toEqual([
      { hour: at("2026-11-21T12:00:00Z"), ms: 600_000 },
      { hour: at("2026-11-21T13:00:00Z"), ms: 3_600_000 },
      { hour: at("2026-11-21T14:00:00Z"), ms: 600_000 },
    ]);
  });
  it("an empty interval has no parts", () => {
    expect(splitByUtcHour({ from: at("2026-11-21T12:00:00Z"), to: at("2026-11-21T12:00:00Z") })).toEqual([]);
  });
});

describe("hourlyMetrics", () => {
  it("derives percentage_down from the minutes_down it is shown with", () => {
    const hour = Date.parse("2026-11-21T12:00:00Z");
    const m = hourlyMetrics({
      now: at("2026-11-21T13:10:00Z"),
      createdAt: at("2026-11-20T00:00:00Z"),
      stored: new Map([[hour, 7]]),
      ongoing: null,
    });
    const last = m[m.length - 1];
    expect(last?.minutesDown).toBe(0.12);
    expect(last?.percentageDown).toBe(0.2);
  });

  const created = at("2026-11-20T00:00:00Z");
  it("24 complete hours, oldest first, ending at the last full hour", () => {
    const m = hourlyMetrics({ now: at("2026-11-21T13:59:59Z"), createdAt: created, stored: new Map(), ongoing: null });
    expect(m).toHaveLength(24);
    expect(m[0]?.hour).toEqual(at("2026-11-20T13:00:00Z"));
    expect(m[23]?.hour).toEqual(at("2026-11-21T12:00:00Z"));
    expect(m.every((h) => h.minutesDown === 0 && h.percentageDown === 0)).toBe(true);
  });
  it("adds stored and ongoing downtime, rounds to 2 decimals, caps at the hour", () => {
    const stored = new Map([
      [at("2026-11-21T10:00:00Z").getTime(), 100],
      [at("2026-11-21T11:00:00Z").getTime(), 3_000],
    ]);
    const m = hourlyMetrics({
      now: at("2026-11-21T12:30:00Z"),
      createdAt: created,
      stored,
      ongoing: { from: at("2026-11-21T11:40:00Z"), to: at("2026-11-21T12:30:00Z") },
    });
    const h10 = m.find((h) => h.hour.getTime() === at("2026-11-21T10:00:00Z").getTime());
    const h11 = m.find((h) => h.hour.getTime() === at("2026-11-21T11:00:00Z").getTime());
    expect(h10).toMatchObject({ minutesDown: 1.67, percentageDown: 2.78 });
    // 3000 s stored + 1200 s ongoing exceeds the hour: capped.
    expect(h11).toMatchObject({ secondsDown: 3_600, minutesDown: 60, percentageDown: 100 });
  });
  it("hours that ended before enrollment count 0", () => {
    const stored = new Map([[at("2026-11-21T09:00:00Z").getTime(), 600]]);
    const m = hourlyMetrics({
      now: at("2026-11-21T12:00:00Z"),
      createdAt: at("2026-11-21T10:00:00Z"),
      stored,
      ongoing: null,
    });
    expect(m.find((h) => h.hour.getTime() === at("2026-11-21T09:00:00Z").getTime())?.minutesDown).toBe(0);
    const enrolledMidHour = hourlyMetrics({
      now: at("2026-11-21T12:00:00Z"),
      createdAt: at("2026-11-21T09:30:00Z"),
      stored,
      ongoing: null,
    });
    expect(enrolledMidHour.find((h) => h.hour.getTime() === at("2026-11-21T09:00:00Z").getTime())?.minutesDown).toBe(
      10,
    );
  });
});

describe("round2", () => {
  it("rounds half up without float surprises", () => {
    expect(round2(1.005)).toBe(1.01);
    expect(round2(2.675)).toBe(2.68);
    expect(round2(16.666666)).toBe(16.67);
    expect(round2(0)).toBe(0);
  });
});

describe("restart rule", () => {
  const outage = at("2026-11-21T12:00:00Z");
  const resumed = at("2026-11-21T12:20:00Z");
  const coverage = { coveredSince: resumed, outageStartedAt: outage };
  it("a router on time when the daemons went away restarts its count at the resumption", () => {
    expect(effectiveLastSeen(at("2026-11-21T11:59:40Z"), coverage, I)).toEqual(resumed);
    // Last heartbeat 45 s before the outage: still within the jitter tolerance.
    expect(effectiveLastSeen(at("2026-11-21T11:59:15Z"), coverage, I)).toEqual(resumed);
  });
  it("a router already silent before the outage keeps its real last heartbeat", () => {
    const silent = at("2026-11-21T11:55:00Z");
    expect(effectiveLastSeen(silent, coverage, I)).toEqual(silent);
  });
  it("a router seen after the resumption, or with no outage on record, is unaffected", () => {
    const later = at("2026-11-21T12:20:05Z");
    expect(effectiveLastSeen(later, coverage, I)).toEqual(later);
    expect(effectiveLastSeen(at("2026-11-21T11:59:40Z"), { coveredSince: outage, outageStartedAt: null }, I)).toEqual(
      at("2026-11-21T11:59:40Z"),
    );
    expect(effectiveLastSeen(later, null, I)).toEqual(later);
  });
  it("coverageOnStart records an outage only when no daemon was alive within the gap", () => {
    const now = at("2026-11-21T12:00:10Z");
    expect(coverageOnStart(null, now, 5_000)).toEqual({ coveredSince: now, aliveAt: now, outageStartedAt: null });
    const alive = {
      coveredSince: at("2026-11-21T10:00:00Z"),
      aliveAt: at("2026-11-21T12:00:06Z"),
      outageStartedAt: null,
    };
    expect(coverageOnStart(alive, now, 5_000)).toEqual({ ...alive, aliveAt: now });
    const stale = { ...alive, aliveAt: at("2026-11-21T12:00:04Z") };
    expect(coverageOnStart(stale, now, 5_000)).toEqual({
      coveredSince: now,
      aliveAt: now,
      outageStartedAt: stale.aliveAt,
    });
  });
});

describe("fault rules", () => {
  const last = at("2026-11-21T12:00:00Z");
  it("starts at the first missed heartbeat and opens after the threshold", () => {
    expect(faultStartsAt(last, I)).toEqual(at("2026-11-21T12:00:30Z"));
    expect(faultOpensAt(last, I, 10)).toEqual(at("2026-11-21T12:05:00Z"));
  });
  it("duration is whole seconds, never negative", () => {
    expect(faultDurationSeconds(at("2026-11-21T12:00:30Z"), at("2026-11-21T12:10:31.999Z"))).toBe(601);
    expect(faultDurationSeconds(at("2026-11-21T12:00:30Z"), at("2026-11-21T12:00:29Z"))).toBe(0);
  });
  it("message names the identity, else the name, else the id", () => {
    expect(siteOfflineMessage({ identity: "core-1", name: "Office", id: "x" })).toBe("Site Offline: core-1");
    expect(siteOfflineMessage({ identity: " ", name: "Office", id: "x" })).toBe("Site Offline: Office");
    expect(siteOfflineMessage({ identity: "", name: "", id: "x" })).toBe("Site Offline: x");
  });
  it("infers a reboot when the uptime is shorter than the silence", () => {
    const resumedAt = at("2026-11-21T12:10:00Z");
    expect(inferFaultCause({ lastSeen: last, resumedAt, uptimeSeconds: 120 })).toBe(FAULT_CAUSE_REBOOT);
    expect(inferFaultCause({ lastSeen: last, resumedAt, uptimeSeconds: 599 })).toBe(FAULT_CAUSE_REBOOT);
    expect(inferFaultCause({ lastSeen: last, resumedAt, uptimeSeconds: 600 })).toBe(FAULT_CAUSE_CONNECTIVITY);
    expect(inferFaultCause({ lastSeen: last, resumedAt, uptimeSeconds: 86_400 })).toBe(FAULT_CAUSE_CONNECTIVITY);
    expect(inferFaultCause({ lastSeen: last, resumedAt, uptimeSeconds: undefined })).toBe(FAULT_CAUSE_UNKNOWN);
  });
});
