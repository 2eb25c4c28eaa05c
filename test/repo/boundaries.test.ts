import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";

/**
 * `scripts/check-boundaries.ts` (part of `npm run lint`) on scratch trees: a tree that keeps every
 * rule passes, and each planted violation fails it with its own message, so no rule is a no-op.
 */
const root = path.resolve(import.meta.dirname, "../..");
const script = path.join(root, "scripts/check-boundaries.ts");
const scratch: string[] = [];
afterAll(() => {
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});

type Tree = Record<string, string>;

// The planted lines are built from parts so that the lint, run on this repository, does not find
// them in this file.
const IMPORT = (what: string, from: string) => ["import", what, "from", `"${from}";`].join(" ");
const TIMER = (ms: number) => ["await new Promise((resolve) => set", `Timeout(resolve, ${ms}));`].join("");
const RETRY = ["{ ret", "ry: 2 }"].join("");

/** What every rule allows: SQL in a repository and in tests, test support in testing/, the wait helper. */
const CLEAN: Tree = {
  "packages/db/src/repositories/routers.repository.ts": [
    'import { defineEntity } from "@mikro-orm/core";',
    "export const byId = (db: { query(sql: string, p: unknown[]): unknown }, id: string) =>",
    '  db.query("select id, name from routers where id = $1", [id]);',
    "export const entity = defineEntity;",
  ].join("\n"),
  "packages/db/src/index.ts": 'export * from "./repositories/routers.repository.ts";\n',
  "packages/shared/src/testing/eventually.ts": [
    "export const eventually = async (check: () => unknown) => {",
    `  while (!(await check())) ${TIMER(10)}`,
    "};",
  ].join("\n"),
  "apps/api/src/features/things/things.service.ts": [
    "/** Select a plan from the list (prose, not SQL). */",
    'export const describeThing = () => "Select one from the list";',
  ].join("\n"),
  "apps/api/src/main.ts": `${IMPORT("{ describeThing }", "./features/things/things.service.ts")}\ndescribeThing();\n`,
  "apps/api/src/testing/harness.ts": 'export const harness = () => "delete from routers";\n',
  "apps/api/src/features/things/things.test.ts": [
    IMPORT("{ it }", "vitest"),
    IMPORT("{ harness }", "../../testing/harness.ts"),
    IMPORT("{ describeThing }", "./things.service.ts"),
    'it("reads rows", async () => {',
    '  const rows = "select * from routers";',
    `  ${TIMER(20)} // work, not a wait: a slow fake`,
    "  return [rows, harness(), describeThing()];",
    "});",
  ].join("\n"),
};

const check = (plant: Tree) => {
  const dir = mkdtempSync(path.join(tmpdir(), "boundaries-"));
  scratch.push(dir);
  for (const [file, text] of Object.entries({ ...CLEAN, ...plant })) {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    writeFileSync(path.join(dir, file), text);
  }
  const run = spawnSync(process.execPath, [script, dir], { encoding: "utf8" });
  return { status: run.status, out: `${run.stdout}${run.stderr}` };
};

describe("the boundary lint", () => {
  it("passes a tree that keeps every rule", () => {
    const { status, out } = check({});
    expect(out).toContain("Boundary rules hold.");
    expect(status).toBe(0);
  });

  it.each<[string, Tree, string]>([
    [
      "SQL outside the persistence package",
      {
        "apps/api/src/features/things/things.service.ts":
          "export const count = (db: { query(s: string): unknown }) =>\n  db.query(`select count(*)::int as n\n  from routers`);\n",
      },
      "apps/api/src/features/things/things.service.ts: SQL outside packages/db's repositories",
    ],
    [
      "an update statement in an app",
      { "apps/api/src/features/things/things.service.ts": 'export const q = "update routers set name = $1";\n' },
      "things.service.ts: SQL outside packages/db's repositories",
    ],
    [
      "an audit entry written by another repository",
      {
        "packages/db/src/repositories/things.repository.ts": `export const q = "${["insert into", "audit_log (id) values ($1)"].join(" ")}";\n`,
      },
      "packages/db/src/repositories/things.repository.ts: audit entries written outside the audit-log repository",
    ],
    [
      "test support outside a testing/ folder",
      {
        "apps/api/src/features/things/fixtures.ts": "export const fixture = 1;\n",
        "apps/api/src/features/things/other.test.ts": `${IMPORT("{ fixture }", "./fixtures.ts")}\nfixture;\n`,
      },
      "apps/api/src/features/things/fixtures.ts: only test code imports it",
    ],
    [
      "production code importing test code",
      { "apps/api/src/main.ts": `${IMPORT("{ harness }", "./testing/harness.ts")}\nharness();\n` },
      "apps/api/src/main.ts: production code imports test code",
    ],
    [
      "production code importing vitest",
      { "apps/api/src/main.ts": `${IMPORT("{ expect }", "vitest")}\nexpect(1);\n` },
      "apps/api/src/main.ts: production code imports vitest",
    ],
    [
      "the process runtime importing the database",
      {
        "packages/runtime/src/lease.ts": `${IMPORT("{ holdClusterLease }", "@fleet/db")}\nexport const lease = holdClusterLease;\n`,
      },
      "packages/runtime/src/lease.ts: packages/runtime may not import @fleet/db",
    ],
    [
      "an external package packages/db does not list",
      { "packages/db/src/pad.ts": `${IMPORT("leftPad", "left-pad")}\nexport const pad = leftPad;\n` },
      "packages/db/src/pad.ts: packages/db may import only",
    ],
    [
      "a retried test",
      {
        "apps/api/src/features/things/retry.test.ts": `${IMPORT("{ it }", "vitest")}\nit("flaky", ${RETRY}, () => {});\n`,
      },
      "apps/api/src/features/things/retry.test.ts:2: a retried test",
    ],
    [
      "a fixed sleep in a test",
      {
        "apps/api/src/features/things/sleep.test.ts": `${IMPORT("{ it }", "vitest")}\nit("waits", async () => {\n  ${TIMER(200)}\n});\n`,
      },
      "apps/api/src/features/things/sleep.test.ts:3: a fixed sleep in a test",
    ],
    [
      "a sleep of node:timers/promises in a black-box test",
      {
        "test/things/sleep.test.ts": `${IMPORT("{ setTimeout }", "node:timers/promises")}\n${IMPORT("{ it }", "vitest")}\nit("waits", async () => {\n  ${["await set", "Timeout(100);"].join("")}\n});\n`,
      },
      "test/things/sleep.test.ts:4: a fixed sleep in a test",
    ],
    [
      "vitest's own waiter beside eventually",
      {
        "apps/api/src/features/things/poll.test.ts": `${IMPORT("{ expect, it }", "vitest")}\nit("waits", async () => {\n  await ${["expect", ".poll"].join("")}(() => 1).toBe(1);\n});\n`,
      },
      "apps/api/src/features/things/poll.test.ts:3: a second waiting helper",
    ],
  ])("refuses %s", (_name, plant, message) => {
    const { status, out } = check(plant);
    expect(out).toContain(message);
    expect(status).toBe(1);
  });
});
