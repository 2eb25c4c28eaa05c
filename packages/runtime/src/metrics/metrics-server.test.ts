import { describe, expect, it } from "vitest";
import { renderMetrics } from "./metrics-endpoint.ts";
import { startMetricsServer } from "./metrics-server.ts";

// docs/operations.md "Metrics": METRICS_PORT moves /metrics off the public ports.
describe("METRICS_PORT", () => {
  it("serves /metrics and the probes on its own port; the public ports answer 404 meanwhile", async () => {
    expect((await renderMetrics(undefined, undefined)).status).toBe(200);
    const server = await startMetricsServer({ host: "127.0.0.1", port: 0, token: "t0ken", isReady: async () => true });
    try {
      const base = `http://127.0.0.1:${server.port}`;
      expect((await fetch(`${base}/metrics`)).status).toBe(401);
      const scrape = await fetch(`${base}/metrics`, { headers: { authorization: "Bearer t0ken" } });
      expect(scrape.status).toBe(200);
      expect(await scrape.text()).toContain("fleet_build_info");
      expect((await fetch(`${base}/readyz`)).status).toBe(200);
      expect((await fetch(`${base}/livez`)).status).toBe(200);
      expect((await fetch(`${base}/other`)).status).toBe(404);
      expect((await renderMetrics("Bearer t0ken", "t0ken")).status).toBe(404);
    } finally {
      await server.close();
    }
    expect((await renderMetrics(undefined, undefined)).status).toBe(200);
  });
});
