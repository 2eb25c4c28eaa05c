import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { acquireJobEngine, loadOemSnapshot, OemRepository, queryOf, snapshotSource } from "@fleet/db";
import { createTestDatabase, databaseFingerprint, type TestDatabase } from "@fleet/db/testing";
import { ConfigError, ManualClock, type TOemProduct } from "@fleet/shared";
import { eventually } from "@fleet/shared/testing";
import pino from "pino";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type ApiConfig, loadApiConfig } from "../../config.ts";
import { billingServices, UNREACHABLE } from "../../testing/billing-services.ts";
import { wireRouters } from "../../wiring/routers.wiring.ts";
import { OEM_REFRESH_QUEUE, refreshOemCatalog, scheduleOemRefresh } from "./oem-refresh.job.ts";

const snapshot = loadOemSnapshot();
const product = (slug: string, keys: string[]): TOemProduct => {
  const base = snapshot.products.find((p) => p.slug === "hex_s");
  if (!base) throw new Error("snapshot lacks hex_s");
  return { ...base, slug, name: `Refreshed ${slug}`, model: keys[0] ?? slug, match_keys: keys };
};
const goodPayload = JSON.stringify({
  version: "2026-12-01",
  products: [product("fresh_one", ["FRESH-1"]), product("fresh_two", ["FRESH-2", "Fresh Board"])],
});

type Handler = (req: IncomingMessage, res: ServerResponse) => void;
let handler: Handler = (_req, res) => res.end(goodPayload);
let hits = 0;
let server: Server;
let baseUrl: string;
let db: TestDatabase;
let repo: OemRepository;
const logLines: Array<Record<string, unknown>> = [];
const logger = pino({ level: "info" }, { write: (line: string) => void logLines.push(JSON.parse(line)) });
const clock = new ManualClock(new Date("2026-12-01T03:17:00Z"));

beforeAll(async () => {
  db = await createTestDatabase();
  repo = new OemRepository(queryOf(db));
  server = createServer((req, res) => {
    hits++;
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await db?.close();
});
beforeEach(() => {
  logLines.length = 0;
  handler = (_req, res) => res.end(goodPayload);
});

const deps = (overrides: Partial<Parameters<typeof refreshOemCatalog>[0]> = {}) => ({
  url: new URL(`${baseUrl}/catalog.json?token=s3cr3t-query-token`),
  db,
  logger,
  clock,
  timeoutMs: 2_000,
  ...overrides,
});

/** Puts a known good catalogue in place, then proves a failing refresh leaves it untouched. */
const expectKeptAfter = async (
  failing: Handler,
  reason: RegExp,
  overrides: Partial<Parameters<typeof refreshOemCatalog>[0]> = {},
) => {
  await db.transaction((query) =>
    new OemRepository(query).replaceAll(snapshot, snapshotSource(snapshot), new Date("2026-11-21T00:00:00Z")),
  );
  const before = await databaseFingerprint(db);
  handler = failing;
  const used = deps(overrides);
  const result = await refreshOemCatalog(used);
  expect(result.ok).toBe(false);
  expect(result.ok ? "" : result.reason).toMatch(reason);
  expect(await databaseFingerprint(db)).toBe(before);
  expect((await repo.findForRouter("RB750Gr3", "hEX"))?.slug).toBe("hex");
  const warning = logLines.find((l) => l.level === 40);
  expect(warning).toMatchObject({
    msg: "OEM catalogue refresh failed; keeping the last good data",
    source: `${used.url.origin}/catalog.json`,
  });
  expect(JSON.stringify(logLines)).not.toContain("s3cr3t-query-token");
};

describe("refreshOemCatalog", () => {
  it("replaces the catalogue with a good payload and records where it came from", async () => {
    const result = await refreshOemCatalog(deps());
    expect(result).toEqual({ ok: true, count: 2 });
    expect(await repo.status()).toEqual({ count: 2, source: `${baseUrl}/catalog.json`, updatedAt: clock.now() });
    expect((await repo.findForRouter("", "fresh board"))?.slug).toBe("fresh_two");
    expect(await repo.findForRouter("RB750Gr3", "hEX")).toBeNull();
    expect(logLines.some((l) => l.msg === "OEM catalogue refreshed" && l.count === 2)).toBe(true);
    expect(JSON.stringify(logLines)).not.toContain("s3cr3t-query-token");
  });

  it("keeps the last good data on HTTP 500", async () => {
    await expectKeptAfter((_req, res) => {
      res.statusCode = 500;
      res.end("upstream exploded");
    }, /HTTP 500/);
  });

  it("keeps the last good data on HTTP 404", async () => {
    await expectKeptAfter((_req, res) => {
      res.statusCode = 404;
      res.end(goodPayload);
    }, /HTTP 404/);
  });

  it("keeps the last good data on a body that is not JSON", async () => {
    await expectKeptAfter((_req, res) => res.end("<html>garbage"), /not valid JSON/);
  });

  it("keeps the last good data when the payload does not match the schema", async () => {
    const broken = JSON.parse(goodPayload);
    broken.products[1].cpu_core_count = 4;
    await expectKeptAfter((_req, res) => res.end(JSON.stringify(broken)), /schema at products\.1\.cpu_core_count/);
  });

  it("keeps the last good data when the catalogue is empty", async () => {
    await expectKeptAfter((_req, res) => res.end(JSON.stringify({ products: [] })), /lists no products/);
  });

  it("keeps the last good data on duplicate slugs", async () => {
    const dup = JSON.stringify({ products: [product("same", ["A"]), product("same", ["B"])] });
    await expectKeptAfter((_req, res) => res.end(dup), /duplicate slug/);
  });

  it("keeps the last good data when the server never answers", async () => {
    await expectKeptAfter(
      () => {
        // Never respond: only the timeout ends this request.
      },
      /timed out/,
      { timeoutMs: 150 },
    );
  });

  it("keeps the last good data when the server is unreachable", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    await expectKeptAfter((_req, res) => res.end(goodPayload), /request failed/, {
      url: new URL(`http://127.0.0.1:${port}/catalog.json?token=s3cr3t-query-token`),
    });
  });

  it("accepts a body of exactly maxBytes and refuses one byte more", async () => {
    const size = Buffer.byteLength(goodPayload);
    await expectKeptAfter((_req, res) => res.end(goodPayload), /larger than/, { maxBytes: size - 1 });
    // Chunked, without content-length: the streaming guard has to catch it.
    await expectKeptAfter(
      (_req, res) => {
        res.write(goodPayload.slice(0, 10));
        res.end(goodPayload.slice(10));
      },
      /larger than/,
      { maxBytes: size - 1 },
    );
    expect(await refreshOemCatalog(deps({ maxBytes: size }))).toEqual({ ok: true, count: 2 });
  });
});

describe("scheduleOemRefresh", () => {
  it("keeps one cluster-wide schedule, runs the same refresh on demand and through a job", async () => {
    await db.transaction((query) =>
      new OemRepository(query).replaceAll(snapshot, snapshotSource(snapshot), clock.now()),
    );
    const engine = await acquireJobEngine(db);
    try {
      const schedule = await scheduleOemRefresh(engine, { ...deps(), cron: "17 3 * * *" });
      // A second API process registers the same schedule: still one.
      const second = await scheduleOemRefresh(engine, { ...deps(), cron: "17 3 * * *" });
      const schedules = await engine.boss.getSchedules(OEM_REFRESH_QUEUE);
      expect(schedules.map((s) => s.cron)).toEqual(["17 3 * * *"]);
      expect(await schedule.runNow()).toEqual({ ok: true, count: 2 });
      const before = hits;
      // What the schedule sends at 03:17 is a plain job of the queue: a worker runs it.
      await engine.send(OEM_REFRESH_QUEUE, {});
      await eventually(() => hits !== before, "a worker to run the sent refresh");
      expect(hits).toBe(before + 1);
      await schedule.stop();
      await second.stop();
    } finally {
      await engine.stop();
    }
  });
});

describe("API wiring", () => {
  it("parses OEM_CATALOG_URL and OEM_REFRESH_CRON", () => {
    expect(loadApiConfig({}).oem).toEqual({ catalogUrl: undefined, refreshCron: "17 3 * * *" });
    const config = loadApiConfig({
      OEM_CATALOG_URL: "https://vendor.example/oem.json",
      OEM_REFRESH_CRON: "0 */6 * * *",
    });
    expect(config.oem.catalogUrl?.toString()).toBe("https://vendor.example/oem.json");
    expect(config.oem.refreshCron).toBe("0 */6 * * *");
    expect(() => loadApiConfig({ OEM_CATALOG_URL: "not a url" })).toThrow(ConfigError);
    expect(() => loadApiConfig({ OEM_CATALOG_URL: "ftp://vendor.example/oem.json" })).toThrow(/OEM_CATALOG_URL/);
    expect(() => loadApiConfig({ OEM_REFRESH_CRON: "every day" })).toThrow(/OEM_REFRESH_CRON/);
    expect(() => loadApiConfig({ OEM_REFRESH_CRON: "61 3 * * *" })).toThrow(/OEM_REFRESH_CRON/);
  });

  it("the routers wiring schedules the refresh only with OEM_CATALOG_URL, and drops it without", async () => {
    const engine = await acquireJobEngine(db);
    const count = async () => (await engine.boss.getSchedules(OEM_REFRESH_QUEUE)).length;
    const env = { PORT: "0", STRIPE_EMULATOR_PORT: "0", DATA_DIR: "memory", JWT_SECRET: "x".repeat(32) };
    const context = (config: ApiConfig) => ({
      config,
      db,
      jobs: engine,
      logger: pino({ level: "silent" }),
      clock,
      wallClock: clock,
    });
    const options = { clearance: billingServices(db, UNREACHABLE).subscriptions, apiUrl: () => "http://127.0.0.1:0" };
    const hitsBefore = hits;
    const wired = await wireRouters(
      context(loadApiConfig({ ...env, OEM_CATALOG_URL: `${baseUrl}/catalog.json` })),
      options,
    );
    expect(await count()).toBe(1);
    await wired.close();
    const plain = await wireRouters(context(loadApiConfig(env)), options);
    expect(await count()).toBe(0);
    await plain.close();
    await engine.stop();
    // Wiring itself does not fetch: the schedule does.
    expect(hits).toBe(hitsBefore);
  });
});
