import { createTestDatabase, type TestDatabase } from "@fleet/db/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadTunnelAgentConfig } from "../config.ts";
import { startHealthServer } from "./health-server.ts";

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.close();
});

describe("the agent's health port", () => {
  it("answers livez always, readyz/healthz while the database is ready, 404 elsewhere", async () => {
    const server = await startHealthServer({ host: "127.0.0.1", port: 0, isReady: () => db.isReady() });
    try {
      const base = `http://127.0.0.1:${server.port}`;
      for (const path of ["/livez", "/readyz", "/healthz"]) {
        const res = await fetch(`${base}${path}`);
        expect(res.status, path).toBe(200);
        expect(await res.json()).toEqual({ status: "ok" });
      }
      expect((await fetch(`${base}/forwards`)).status).toBe(404);
      expect((await fetch(`${base}/livez`, { method: "POST" })).status).toBe(405);
    } finally {
      await server.close();
    }
  });

  it("serves /metrics, behind the bearer token when METRICS_TOKEN is set", async () => {
    const server = await startHealthServer({
      host: "127.0.0.1",
      port: 0,
      isReady: async () => true,
      metricsToken: "agent-metrics",
    });
    try {
      const url = `http://127.0.0.1:${server.port}/metrics`;
      expect((await fetch(url)).status).toBe(401);
      expect((await fetch(url, { headers: { authorization: "Bearer nope" } })).status).toBe(401);
      const res = await fetch(url, { headers: { authorization: "Bearer agent-metrics" } });
      expect(res.status).toBe(200);
      const text = await res.text();
      expect(text).toContain("# TYPE fleet_relay_connections_total counter");
      expect(text).toContain("# TYPE fleet_jobs gauge");
    } finally {
      await server.close();
    }
  });

  it("reports not ready (503) while liveness stays 200", async () => {
    const server = await startHealthServer({ host: "127.0.0.1", port: 0, isReady: async () => false });
    try {
      const base = `http://127.0.0.1:${server.port}`;
      expect((await fetch(`${base}/readyz`)).status).toBe(503);
      expect((await fetch(`${base}/healthz`)).status).toBe(503);
      expect((await fetch(`${base}/livez`)).status).toBe(200);
    } finally {
      await server.close();
    }
  });

  it("reads AGENT_HEALTH_PORT (default 3002) and refuses a bad one", () => {
    expect(loadTunnelAgentConfig({}).healthPort).toBe(3002);
    expect(loadTunnelAgentConfig({ AGENT_HEALTH_PORT: "0" }).healthPort).toBe(0);
    expect(loadTunnelAgentConfig({ AGENT_HEALTH_PORT: "65535" }).healthPort).toBe(65535);
    expect(() => loadTunnelAgentConfig({ AGENT_HEALTH_PORT: "65536" })).toThrow(/AGENT_HEALTH_PORT/);
    expect(() => loadTunnelAgentConfig({ AGENT_HEALTH_PORT: "http" })).toThrow(/AGENT_HEALTH_PORT/);
  });
});
