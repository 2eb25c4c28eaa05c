import { startTestSystem, type TestSystem } from "@fleet/all-in-one/testing";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { loadAllInOneConfig } from "@fleet/all-in-one";
import { createTestDatabase, type TestDatabase } from "@fleet/db/testing";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { testSystemEnv } from "../support/system-env.ts";

/**
 * deploy/observability (docs/operations.md "Observability"): the alert rules pass `promtool check
 * rules` and their own `promtool test rules`, and every metric the rules and the Grafana dashboard
 * name exists in a live scrape of the running system (a misspelt or removed metric would leave a
 * panel empty and an alert silent for ever).
 */
const root = path.resolve(import.meta.dirname, "../..");
const dir = path.join(root, "deploy/observability");
const read = (file: string) => readFileSync(path.join(dir, file), "utf8");

/** Metric names of ours and of the Node.js defaults in a PromQL expression. */
const metricNames = (expr: string): string[] =>
  [...expr.matchAll(/\b((?:fleet|nodejs|process)_[a-z0-9_]+)\b/g)].map((m) => m[1] ?? "");

interface Panel {
  type: string;
  title: string;
  id: number;
  targets?: Array<{ expr?: string; refId: string }>;
}
const dashboard = JSON.parse(read("grafana-dashboard.json")) as { uid: string; panels: Panel[] };
const panelExprs = dashboard.panels
  .filter((p) => p.type !== "row")
  .flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr ?? "" })));
const rules = (
  parse(read("alerts.yaml")) as { groups: Array<{ rules: Array<{ alert: string; expr: string }> }> }
).groups.flatMap((g) => g.rules);

let db: TestDatabase;
let system: TestSystem;
/** `# TYPE <name> <type>` of a live scrape. */
let scraped: Map<string, string>;

beforeAll(async () => {
  db = await createTestDatabase();
  const config = loadAllInOneConfig(testSystemEnv({ ENTRY_POINT_PORTS: "63350-63359" }));
  system = await startTestSystem({ config, logger: pino({ level: "silent" }), db });
  const text = await (await fetch(`${system.api.url}/metrics`)).text();
  scraped = new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1] ?? "", m[2] ?? ""]));
});
afterAll(async () => {
  await system?.close();
  await db?.close();
});

/** A name as scraped: a histogram's _bucket/_sum/_count series belong to its base name. */
const exists = (name: string): boolean => {
  if (scraped.has(name)) return true;
  const base = name.replace(/_(bucket|sum|count)$/, "");
  return base !== name && ["histogram", "summary"].includes(scraped.get(base) ?? "");
};

describe("alert rules", () => {
  it("pass promtool check rules and promtool test rules", () => {
    const check = execFileSync("promtool", ["check", "rules", "alerts.yaml"], { cwd: dir, encoding: "utf8" });
    expect(check).toMatch(/SUCCESS: \d+ rules found/);
    const tested = execFileSync("promtool", ["test", "rules", "alerts.test.yaml"], { cwd: dir, encoding: "utf8" });
    expect(tested).toMatch(/SUCCESS/);
  });

  it("cover what an operator must hear about", () => {
    const names = rules.map((r) => r.alert);
    for (const alert of [
      "FleetApiErrorRate",
      "FleetJobsDeadLettered",
      "FleetJobsWaitingTooLong",
      "FleetWebhooksDead",
      "FleetHeartbeatFlushFailing",
      "FleetRoutersOffline",
      "FleetTunnelHubDown",
      "FleetCertificateExpiring",
    ]) {
      expect(names).toContain(alert);
    }
    // Every alert is tested.
    const tests = read("alerts.test.yaml");
    for (const name of names) expect(tests, name).toContain(`alertname: ${name}`);
  });

  it("name only metrics the system exports", () => {
    const missing = rules.flatMap((r) =>
      metricNames(r.expr)
        .filter((n) => !exists(n))
        .map((n) => `${r.alert}: ${n}`),
    );
    expect(scraped.size).toBeGreaterThan(30);
    expect(missing).toEqual([]);
  });
});

describe("Grafana dashboard", () => {
  it("is a dashboard with unique panel ids and a query in every panel", () => {
    expect(dashboard.uid).toBe("fleet-overview");
    const ids = dashboard.panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const panel of dashboard.panels.filter((p) => p.type !== "row")) {
      expect(panel.targets?.length, panel.title).toBeGreaterThan(0);
      for (const target of panel.targets ?? [])
        expect(metricNames(target.expr ?? "").length, panel.title).toBeGreaterThan(0);
    }
  });

  it("names only metrics a live scrape of the running system has", () => {
    const missing = panelExprs.flatMap(({ panel, expr }) =>
      metricNames(expr)
        .filter((n) => !exists(n))
        .map((n) => `${panel}: ${n}`),
    );
    expect(missing).toEqual([]);
  });

  it("the check itself notices a metric that does not exist", () => {
    expect(exists("fleet_http_requests_total")).toBe(true);
    expect(exists("fleet_http_request_duration_seconds_bucket")).toBe(true);
    expect(exists("fleet_http_request_total")).toBe(false);
    expect(exists("fleet_open_faults_bucket")).toBe(false);
  });
});
