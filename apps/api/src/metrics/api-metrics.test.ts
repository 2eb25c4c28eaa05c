import { Counter, Histogram, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { RequestSeries } from "./api-metrics.ts";

const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10];
const metrics = () => {
  const registry = new Registry();
  const labelNames = ["route", "method", "status"] as const;
  const counter = new Counter({ name: "requests_total", help: "h", labelNames, registers: [registry] });
  const histogram = new Histogram({
    name: "duration_seconds",
    help: "h",
    labelNames,
    buckets: BUCKETS,
    registers: [registry],
  });
  return { registry, counter, histogram };
};

describe("RequestSeries (request metrics counted without prom-client's per-call work)", () => {
  it("scrapes exactly as prom-client's own inc and observe, across label sets, bounds and a reset", async () => {
    const ours = metrics();
    const theirs = metrics();
    const series = new RequestSeries(ours.counter, ours.histogram);
    const observe = (route: string, method: string, status: number, seconds: number) => {
      series.observe(route, method, status, seconds);
      const labels = { route, method, status: String(status) };
      theirs.counter.inc(labels);
      theirs.histogram.observe(labels, seconds);
    };
    const values = [0, 0.0004, 0.001, 0.0025, 0.003, 0.01, 0.7, 1, 9.99, 10, 42];
    for (let round = 0; round < 3; round++) {
      for (const seconds of values) {
        observe("/v1/account", "GET", 200, seconds);
        observe("/trpc/account.get", "GET", 200, seconds / 2);
        observe("/v1/account", "GET", 401, seconds * 3);
        observe("unmatched", "OTHER", 404, seconds);
      }
      expect(await ours.registry.metrics()).toBe(await theirs.registry.metrics());
    }
    for (const m of [ours, theirs]) {
      m.counter.reset();
      m.histogram.reset();
    }
    for (const seconds of values) observe("/v1/account", "GET", 200, seconds);
    const text = await ours.registry.metrics();
    expect(text).toBe(await theirs.registry.metrics());
    expect(text).toContain(`requests_total{route="/v1/account",method="GET",status="200"} ${values.length}`);
    expect(text).toContain(`duration_seconds_bucket{le="0.001",route="/v1/account",method="GET",status="200"} 3`);
  });
});
