import { openDatabase } from "@fleet/db";
import { type OwnPostgres, startOwnPostgres, type TestDatabase } from "@fleet/db/testing";
import { eventually } from "@fleet/shared/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type ApiHarness, startApiHarness } from "../testing/api-harness.ts";

// docs/api.md "Errors": while the database is unreachable every request that needs it answers 503
// with `Retry-After` in its prefix's shape, never 500, and the API recovers without a restart.
// PostgreSQL is this test's own cluster (stopped and started here), never the shared server.

let pg: OwnPostgres;
let h: ApiHarness;

beforeAll(async () => {
  const own = await startOwnPostgres();
  if (!own) throw new Error("this test needs PostgreSQL's binaries (/usr/lib/postgresql/<version>/bin)");
  pg = own;
  const db = await openDatabase({ databaseUrl: pg.url, dataDir: "memory", poolSize: 4 });
  await db.migrate();
  h = await startApiHarness({}, { db: Object.assign(db, { url: pg.url }) satisfies TestDatabase });
}, 120_000);

afterAll(async () => {
  await h?.close().catch(() => {});
  await pg?.destroy();
}, 60_000);

const retryAfter = (headers: Headers) => headers.get("retry-after") ?? "";

it("answers 503 with Retry-After in each prefix's shape while PostgreSQL is down, and recovers without a restart", async () => {
  const { token } = await h.login();
  const calls = [
    () => h.request("GET", "/v1/account", { token }),
    () => h.request("GET", "/api/routers", { token }),
    () => h.request("POST", "/api/routers", { token, body: { name: "edge" } }),
    () => h.request("GET", "/trpc/routers.list", { token }),
    () => h.request("GET", "/trpc/account.get,routers.list?batch=1&input=%7B%7D", { token }),
    () => h.request("POST", "/v1/auth/dev-login", { body: { email: "outage@example.com" } }),
  ];
  const before = await Promise.all(calls.map((call) => call()));
  for (const res of before) expect(res.status).toBeLessThan(500);

  await pg.stop();
  const [account, list, enroll, trpc, batch, login] = await Promise.all(calls.map((call) => call()));
  for (const res of [account, list, enroll, trpc, batch, login]) {
    expect(res?.status).toBe(503);
    expect(retryAfter(res?.headers ?? new Headers())).toMatch(/^[1-9]\d*$/);
  }
  expect(account?.body).toMatchObject({ message: expect.any(String), code: "database_unavailable" });
  expect(login?.body).toMatchObject({ message: expect.any(String), code: "database_unavailable" });
  for (const res of [list, enroll]) expect(res?.body).toMatchObject({ status: "error", message: expect.any(String) });
  expect(trpc?.body).toMatchObject({ error: { data: { code: "SERVICE_UNAVAILABLE", httpStatus: 503 } } });
  expect(batch?.body).toEqual([
    expect.objectContaining({
      error: expect.objectContaining({ data: expect.objectContaining({ code: "SERVICE_UNAVAILABLE" }) }),
    }),
    expect.objectContaining({
      error: expect.objectContaining({ data: expect.objectContaining({ code: "SERVICE_UNAVAILABLE" }) }),
    }),
  ]);
  expect((await h.request("GET", "/readyz")).status).toBe(503);

  await pg.start();
  await eventually(
    async () => (await h.request("GET", "/api/routers", { token })).status === 200,
    "the API to answer again",
    30_000,
  );
  for (const res of await Promise.all(calls.map((call) => call()))) expect(res.status).toBeLessThan(500);
}, 120_000);
