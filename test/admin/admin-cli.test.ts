import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  createApiKeyCommand,
  createOrganizationCommand,
  failedJobsCommand,
  retryJobCommand,
} from "@fleet/all-in-one/admin/admin-commands";
import { runAdmin } from "@fleet/all-in-one/admin/admin-run";
import { acquireJobEngine, type JobEngine, listRouterJobs, ROUTER_JOBS_DEAD_LETTER, routerJobsQueue } from "@fleet/db";
import { createTestDatabase, type TestDatabase } from "@fleet/db/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/** `npm run admin -- ...` as a real process (docs/operations.md "Commands"). */
const root = path.resolve(import.meta.dirname, "../..");
let db: TestDatabase;
let dataDir: string;

const admin = (args: string[], extra: Record<string, string> = {}) =>
  new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [path.join(root, "apps/all-in-one/src/admin/admin-cli.ts"), ...args], {
      cwd: root,
      env: {
        PATH: process.env.PATH ?? "",
        LOG_LEVEL: "silent",
        DATA_DIR: dataDir,
        ...(db.url ? { DATABASE_URL: db.url } : {}),
        ...extra,
      },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => {
      stdout += c.toString();
    });
    child.stderr.on("data", (c: Buffer) => {
      stderr += c.toString();
    });
    child.on("exit", (code) => resolve({ code, stdout, stderr }));
  });

beforeAll(async () => {
  dataDir = mkdtempSync(path.join(tmpdir(), "fleet-admin-"));
  // On PostgreSQL the CLI works on a private database; on PGlite on its own DATA_DIR (PGlite files
  // take one process at a time), so the in-process tests below get a database of their own.
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

/** The CLI in this process, on the test database: everything that is not about being a process. */
const adminHere = async (args: string[]) => {
  let stdout = "";
  let stderr = "";
  let opened = false;
  const code = await runAdmin(args, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) }, async () => {
    opened = true;
    return { context: { db, heartbeatIntervalMs: 30_000 }, close: async () => {} };
  });
  return { code, stdout, stderr, opened };
};

describe("npm run admin", () => {
  it("as a process: migrates in production, creates an organization with its owner, refuses the same owner with exit code 2", async () => {
    // As the Kubernetes init container and compose's `migrate` run it: production, with the
    // database and none of the apps' secrets.
    const migrated = await admin(["migrate"], { NODE_ENV: "production" });
    expect(migrated.stderr).toBe("");
    expect(migrated.code).toBe(0);
    expect(migrated.stdout).toMatch(/migrations applied/);

    const created = await admin([
      "org",
      "create",
      "--name",
      "Acme Ops",
      "--owner-email",
      "owner@acme.example",
      "--json",
    ]);
    expect(created.code).toBe(0);
    const ids = JSON.parse(created.stdout);
    expect(ids).toMatchObject({ created: true, organizationId: expect.any(String), teamId: expect.any(String) });
    // The same owner again changes nothing and says so, in one line.
    const again = await admin(["org", "create", "--name", "Acme Ops", "--owner-email", "owner@acme.example"]);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain(ids.organizationId);
    expect(again.stderr.trimEnd().split("\n")).toHaveLength(1);
  }, 180_000);

  it("reports status as JSON", async () => {
    const status = await adminHere(["status", "--json"]);
    expect(status.code).toBe(0);
    const report = JSON.parse(status.stdout);
    expect(report).toMatchObject({ migrations: "applied", routers: { connected: 0 }, openFaults: 0 });
    expect(Array.isArray(report.queues)).toBe(true);
  });

  it("refuses bad input with exit code 2 and one line: names at the 200-character edge, unknown commands, ids", async () => {
    expect((await adminHere(["org", "create", "--name", "n".repeat(200)])).code).toBe(0);
    const long = await adminHere(["org", "create", "--name", "n".repeat(201)]);
    expect(long).toMatchObject({ code: 2, stdout: "" });
    expect(long.stderr).toMatch(/^admin: --name must be 1-200 characters\n$/);
    expect((await adminHere(["org", "create", "--name", "bad\u0007name"])).code).toBe(2);
    expect((await adminHere(["jobs", "retry", "not-a-uuid"])).code).toBe(2);
    expect((await adminHere(["jobs", "retry", crypto.randomUUID()])).stderr).toMatch(/no job/);
    // A command line that cannot be run is refused before any database is opened.
    for (const args of [
      ["frobnicate"],
      ["org", "create"],
      ["status", "--bogus"],
      ["apikey", "create", "--org", "x", "--scopes", "nope"],
    ]) {
      expect(await adminHere(args), args.join(" ")).toMatchObject({ code: 2, opened: false });
    }
    expect(await adminHere([])).toMatchObject({ code: 2, opened: false, stdout: expect.stringMatching(/^usage:/) });
    expect(await adminHere(["--help"])).toMatchObject({ code: 0, opened: false });
  });
});

describe("failed jobs", () => {
  let engine: JobEngine;
  beforeAll(async () => {
    engine = await acquireJobEngine(db);
    await engine.defineQueue(routerJobsQueue());
  });
  afterAll(async () => {
    await engine?.stop();
  });

  it("lists a dead-lettered router job with its error and queues it again on its router", async () => {
    const routerId = crypto.randomUUID();
    const forwardId = crypto.randomUUID();
    const deadId = await engine.send(ROUTER_JOBS_DEAD_LETTER, {
      kind: "forward.apply",
      router_id: routerId,
      forward_id: forwardId,
    });
    const context = { db, heartbeatIntervalMs: 30_000 };
    const listed = (await failedJobsCommand(context)).json as Array<{ id: string; queue: string }>;
    expect(listed.find((j) => j.id === deadId)).toMatchObject({ queue: ROUTER_JOBS_DEAD_LETTER });
    await retryJobCommand(context, deadId ?? "");
    const requeued = await listRouterJobs(db, { forwardId });
    expect(requeued).toMatchObject([{ kind: "forward.apply", routerId, state: "created" }]);
    expect((await failedJobsCommand(context)).json).not.toContainEqual(expect.objectContaining({ id: deadId }));
  });
});

describe("apikey create", () => {
  it("bootstraps an organization's first API key, which then authenticates against the API", async () => {
    const { startApiHarness } = await import("@fleet/api/testing");
    const h = await startApiHarness();
    try {
      const context = { db: h.db, heartbeatIntervalMs: 30_000 };
      const org = (await createOrganizationCommand(context, "Bootstrap Co")).json as { organizationId: string };
      const created = (await createApiKeyCommand(context, org.organizationId, "ci")).json as {
        key: string;
        scopes: string[];
      };
      expect(created.scopes).toEqual([
        "account:read",
        "account:write",
        "routers:read",
        "routers:write",
        "organizations:write",
      ]);
      const routers = await h.request("GET", "/api/routers", { token: created.key });
      expect(routers.status).toBe(200);
      expect(routers.body).toEqual({ status: "success", data: [] });
      const account = await h.request("GET", "/v1/account", { token: created.key });
      expect(account.status).toBe(422); // no billing account yet: the SPEC's no-account error, not 401
      // Bad input changes nothing.
      await expect(createApiKeyCommand(context, "not-a-uuid")).rejects.toThrow(/--org/);
      await expect(createApiKeyCommand(context, crypto.randomUUID())).rejects.toThrow(/no organization/);
      await expect(createApiKeyCommand(context, org.organizationId, "bad\u0000name")).rejects.toThrow(/--name/);
      await expect(createApiKeyCommand(context, org.organizationId, "n".repeat(101))).rejects.toThrow(/--name/);
      expect((await h.request("GET", "/v1/api-keys", { token: created.key })).body).toHaveLength(1);
    } finally {
      await h.close();
    }
  }, 120_000);
});
