import { ManualClock } from "@fleet/shared";
import { describe, expect, it } from "vitest";
import { HealthTracker } from "./health-tracker.ts";

// docs/api.md "Health": interface rates follow the interface's name, whatever its place in the report.

const START = Date.UTC(2026, 11, 1, 0, 0, 0);

describe("HealthTracker interfaces", () => {
  it("keeps each interface's rate by name when the report reorders, drops or adds interfaces", () => {
    const clock = new ManualClock(START);
    const tracker = new HealthTracker({ sampleSeconds: 60, clock });
    const beat = (offsetMs: number, interfaces: Array<[string, number]>) => {
      clock.set(START + offsetMs);
      tracker.observe("r1", START + offsetMs, {
        interfaces: interfaces.map(([name, rx]) => ({ name, rx_bytes: rx, tx_bytes: 0, running: true })),
      });
    };
    const rates = (interfaces: Array<{ name: string; rxBps: number | null }>) =>
      Object.fromEntries(interfaces.map((i) => [i.name, i.rxBps]));
    beat(0, [
      ["a", 0],
      ["b", 0],
    ]);
    expect(rates(tracker.drain().interfaces)).toEqual({ a: null, b: null });
    beat(10_000, [
      ["b", 1_000],
      ["a", 2_000],
    ]);
    beat(20_000, [
      ["c", 5],
      ["a", 4_000],
    ]);
    // c is new (no rate yet); b was not in the last report but reported in this period.
    expect(rates(tracker.drain().interfaces)).toEqual({ a: 1_600, b: 800, c: null });
    beat(30_000, [
      ["a", 5_000],
      ["c", 1_005],
    ]);
    // The period closes: the latest rates, and each interface's sample: its own bytes over its own seconds.
    clock.set(START + 60_000);
    const flush = tracker.drain();
    expect(rates(flush.interfaces)).toEqual({ a: 800, b: 800, c: 800 });
    expect(rates(flush.trafficSamples)).toEqual({ a: (5_000 * 8) / 30, b: 800, c: 800 });
  });

  it("starts each period and hour from zero: consecutive samples and hours hold only their own reports", () => {
    const clock = new ManualClock(START);
    const tracker = new HealthTracker({ sampleSeconds: 60, clock });
    const beat = (offsetMs: number, rx: number, errors: number, cpu: number) => {
      clock.set(START + offsetMs);
      tracker.observe("r1", START + offsetMs, {
        resources: { cpu_load: cpu },
        interfaces: [{ name: "a", rx_bytes: rx, tx_bytes: 0, rx_errors: errors }],
      });
    };
    const HOUR = 3_600_000;
    beat(0, 0, 0, 10);
    beat(30_000, 3_000, 1, 30);
    beat(90_000, 9_000, 3, 50); // second period: 6,000 bytes over 60 s, 2 errors
    beat(HOUR + 90_000, 9_000 + 36_000, 3, 70); // the second hour: 36,000 bytes over 3,600 s
    beat(HOUR + 150_000, 9_000 + 36_600, 4, 90);
    clock.set(START + 2 * HOUR);
    const flush = tracker.drain();
    expect(flush.trafficSamples.map((t) => [t.atMs - START, t.rxBps, t.rxErrors])).toEqual([
      [0, 800, 1],
      [60_000, 800, 2],
      [HOUR + 60_000, 80, 0],
      [HOUR + 120_000, 80, 1],
    ]);
    expect(flush.trafficHours.map((t) => [t.atMs - START, t.rxBps, t.rxErrors])).toEqual([
      [0, 800, 3],
      [HOUR, 80, 1],
    ]);
    expect(flush.resourceHours.map((h) => [h.atMs - START, h.min.cpuLoad, h.avg.cpuLoad, h.max.cpuLoad])).toEqual([
      [0, 10, 30, 50],
      [HOUR, 70, 80, 90],
    ]);
  });

  it("gives a renamed interface a fresh start: nothing of the interface it replaces carries over", () => {
    const clock = new ManualClock(START);
    const tracker = new HealthTracker({ sampleSeconds: 60, clock });
    const beat = (offsetMs: number, interfaces: Array<[string, number, number]>) => {
      clock.set(START + offsetMs);
      tracker.observe("r1", START + offsetMs, {
        interfaces: interfaces.map(([name, rx, errors]) => ({ name, rx_bytes: rx, tx_bytes: 0, rx_errors: errors })),
      });
    };
    beat(0, [
      ["a", 0, 0],
      ["b", 0, 0],
    ]);
    beat(30_000, [
      ["a", 3_000, 0],
      ["b", 6_000, 5],
    ]);
    clock.set(START + 60_000);
    tracker.drain();
    // The next period: b is gone (renamed c), and a third interface arrives: c takes b's place, d a new one.
    beat(60_000, [
      ["a", 6_000, 0],
      ["c", 100, 0],
    ]);
    beat(90_000, [
      ["a", 9_000, 0],
      ["c", 3_100, 1],
      ["d", 50, 0],
    ]);
    clock.set(START + 120_000);
    const flush = tracker.drain();
    const byName = Object.fromEntries(flush.interfaces.map((i) => [i.name, [i.rxBytes, i.rxBps, i.rxErrors]]));
    expect(byName).toEqual({ a: [9_000, 800, 0], c: [3_100, 800, 1], d: [50, null, 0] });
    expect(flush.trafficSamples.map((t) => [t.name, t.rxBps, t.rxErrors])).toEqual([
      ["a", 800, 0],
      ["c", 800, 1],
      ["d", null, 0],
    ]);
    // d's block was b's: b's bytes and errors of the hour stay out of d's hour.
    clock.set(START + 3_600_000);
    expect(tracker.drain().trafficHours.map((t) => [t.name, t.rxBps, t.rxErrors])).toEqual([
      ["a", 800, 0],
      ["c", 800, 1],
    ]);
  });
});
