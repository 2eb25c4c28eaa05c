/**
 * The dependency and naming rules of docs/contributing.md ("Dependency rules", "Naming", "Tests") as
 * a lint: who may import whom, no test code in production code and test support only in `testing/`
 * folders, `process.env` read only by configuration modules, SQL only in the persistence package,
 * audit entries written only by the audit-log repository, tRPC routers only in `*.routes.ts`, no
 * `ports/` folders, nothing pointing outside the repository, no `retry:` and no fixed sleeps in tests. Run by `npm run lint` (and CI).
 *
 * `node scripts/check-boundaries.ts [root]` checks another tree: `test/repo/boundaries.test.ts`
 * plants one violation of each rule in a scratch tree and expects this script to refuse it.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";

const root = path.resolve(process.argv[2] ?? path.join(import.meta.dirname, ".."));

interface Area {
  dir: string;
  /** Workspace packages (@fleet/...) this area may import. */
  allowedInternal: string[] | "any";
  /** External packages it may import (undefined: any). */
  allowedExternal?: string[];
}

const AREAS: Area[] = [
  { dir: "packages/shared", allowedInternal: [], allowedExternal: ["zod", "ipaddr.js"] },
  {
    dir: "packages/runtime",
    allowedInternal: ["@fleet/shared"],
    // Tracing and the metrics registry every process shares.
    allowedExternal: [
      "prom-client",
      "@opentelemetry/api",
      "@opentelemetry/context-async-hooks",
      "@opentelemetry/core",
      "@opentelemetry/exporter-trace-otlp-http",
      "@opentelemetry/resources",
      "@opentelemetry/sdk-trace",
    ],
  },
  {
    dir: "packages/db",
    allowedInternal: ["@fleet/shared", "@fleet/runtime"],
    // The ORM, its two drivers and its typed query builder, the job engine, and the pool, job and
    // cluster-lease metrics.
    allowedExternal: [
      "@mikro-orm/core",
      "@mikro-orm/migrations",
      "@mikro-orm/sql",
      "@mikro-orm/pglite",
      "@mikro-orm/postgresql",
      "@electric-sql/pglite",
      "kysely",
      "pg",
      "pg-boss",
      "prom-client",
    ],
  },
  { dir: "packages/stripe-emulator", allowedInternal: [] },
  { dir: "apps/api", allowedInternal: ["@fleet/shared", "@fleet/runtime", "@fleet/db", "@fleet/stripe-emulator"] },
  { dir: "apps/heartbeat-daemon", allowedInternal: ["@fleet/shared", "@fleet/runtime", "@fleet/db"] },
  { dir: "apps/tunnel-agent", allowedInternal: ["@fleet/shared", "@fleet/runtime", "@fleet/db"] },
  { dir: "apps/router-simulator", allowedInternal: ["@fleet/shared"] },
  // The console reaches the system only through the typed client (checked below: `@fleet/api/client`).
  { dir: "apps/console", allowedInternal: ["@fleet/api"] },
  { dir: "apps/all-in-one", allowedInternal: "any" },
  { dir: "test", allowedInternal: "any" },
  { dir: "bench", allowedInternal: "any" },
];

const isTestFile = (file: string) => /\.test\.ts$/.test(file) || file.includes(`${path.sep}testing${path.sep}`);
const mayReadEnv = (file: string) =>
  /(^|\/)config\.ts$/.test(file) ||
  isTestFile(file) ||
  file.startsWith("test/") ||
  file.startsWith("bench/") ||
  file.startsWith("scripts/") ||
  // The console's build tooling (it names the bundle's NODE_ENV), like scripts/.
  file === "apps/console/vite.config.ts" ||
  file.startsWith("apps/console/build/");

const walk = (dir: string): string[] => {
  const out: string[] = [];
  if (!existsSync(dir)) return out;
  for (const name of readdirSync(dir)) {
    if (name === "node_modules" || name.startsWith(".")) continue;
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) out.push(...walk(full));
    else if (name.endsWith(".ts") || name.endsWith(".tsx")) out.push(full);
  }
  return out;
};

const IMPORT = /(?:import|export)\s[^'"]*?from\s*["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/g;
const problems: string[] = [];

for (const area of AREAS) {
  const base = path.join(root, area.dir);
  let files: string[];
  try {
    files = walk(base);
  } catch {
    continue;
  }
  for (const file of files) {
    const rel = path.relative(root, file);
    const source = readFileSync(file, "utf8");
    for (const match of source.matchAll(IMPORT)) {
      const spec = match[1] ?? match[2] ?? "";
      if (spec.startsWith(".")) {
        const target = path.resolve(path.dirname(file), spec);
        if (!target.startsWith(base + path.sep)) problems.push(`${rel}: relative import leaves ${area.dir}: ${spec}`);
        if (!isTestFile(file) && (/\.test\.ts$/.test(target) || target.includes(`${path.sep}testing${path.sep}`))) {
          problems.push(`${rel}: production code imports test code: ${spec}`);
        }
        continue;
      }
      if (spec.startsWith("node:")) continue;
      const name = spec.startsWith("@") ? spec.split("/").slice(0, 2).join("/") : (spec.split("/")[0] ?? spec);
      if (name.startsWith("@fleet/")) {
        // Any test may wait with the one shared helper (`eventually`), even in a package that imports nothing internal.
        const sharedTestHelper = isTestFile(file) && spec === "@fleet/shared/testing";
        if (area.allowedInternal !== "any" && !area.allowedInternal.includes(name) && !sharedTestHelper) {
          problems.push(`${rel}: ${area.dir} may not import ${name}`);
        }
        if (
          !isTestFile(file) &&
          !rel.startsWith("test/") &&
          !rel.startsWith("bench/") &&
          /\/testing(\/|$)/.test(spec)
        ) {
          problems.push(`${rel}: production code imports test code: ${spec}`);
        }
        if (area.allowedInternal !== "any" && name !== "@fleet/db" && spec !== name && !spec.startsWith(`${name}/`)) {
          problems.push(`${rel}: odd import ${spec}`);
        }
      } else if (area.allowedExternal && !area.allowedExternal.includes(name) && !isTestFile(file)) {
        problems.push(`${rel}: ${area.dir} may import only ${area.allowedExternal.join(", ")}, not ${name}`);
      }
    }
    if (!mayReadEnv(rel) && /process\.env\b/.test(source.replace(/\/\/.*$|\/\*[\s\S]*?\*\//gm, ""))) {
      problems.push(`${rel}: reads process.env (only config.ts modules may)`);
    }
  }
}

// docs/console.md "How it talks to the system": the console's browser code reaches the system only
// through the typed tRPC client. It imports nothing of the API but `@fleet/api/client` (whose
// `AppRouter` is a type), nothing of Node, and makes no HTTP call of its own except the card
// processor's client-side flow in processor.ts (card data goes to the processor, never to us).
const CONSOLE_SRC = "apps/console/src";
const CONSOLE_HTTP_EXEMPT = new Set([`${CONSOLE_SRC}/processor.ts`]);
for (const file of walk(path.join(root, CONSOLE_SRC))) {
  const rel = path.relative(root, file);
  const source = readFileSync(file, "utf8");
  for (const match of source.matchAll(IMPORT)) {
    const spec = match[1] ?? match[2] ?? "";
    if (spec.startsWith("@fleet/") && spec !== "@fleet/api/client") {
      problems.push(`${rel}: the console imports only @fleet/api/client of the system, not ${spec}`);
    }
    if (spec.startsWith("node:")) problems.push(`${rel}: browser code imports ${spec}`);
  }
  const code = source.replace(/\/\/.*$|\/\*[\s\S]*?\*\//gm, "");
  if (
    !CONSOLE_HTTP_EXEMPT.has(rel) &&
    /\bfetch\s*\(|XMLHttpRequest|new\s+EventSource|new\s+WebSocket|sendBeacon/.test(code)
  ) {
    problems.push(`${rel}: the console calls the system only through the tRPC client (no fetch, XHR, EventSource)`);
  }
}

// Naming: "router" is a network router, so a tRPC router (`router({ ... })` from trpc/init.ts) lives
// only in a `*.routes.ts` module (and the root, trpc/app-router.ts); "port" is a TCP port, so
// interface folders are `contracts/`, never `ports/`.
const ROUTES_EXEMPT = new Set(["apps/api/src/trpc/app-router.ts", "apps/api/src/trpc/init.ts"]);
for (const file of walk(path.join(root, "apps/api/src"))) {
  const rel = path.relative(root, file);
  if (rel.endsWith(".routes.ts") || ROUTES_EXEMPT.has(rel) || /\.test\.ts$/.test(rel)) continue;
  const source = readFileSync(file, "utf8");
  if (/\brouter\(\s*\{/.test(source)) problems.push(`${rel}: a tRPC router outside a *.routes.ts module`);
}
for (const dir of ["apps", "packages", "test", "bench", "scripts"]) {
  let files: string[];
  try {
    files = walk(path.join(root, dir));
  } catch {
    continue;
  }
  for (const file of files) {
    const rel = path.relative(root, file);
    if (rel.split(path.sep).includes("ports")) problems.push(`${rel}: a ports/ folder (interfaces live in contracts/)`);
  }
}

// The tRPC layer is below HTTP: trpc/ never imports http/ (the error description and the JSend
// envelopes live in trpc/, the HTTP transports render them).
for (const file of walk(path.join(root, "apps/api/src/trpc"))) {
  const rel = path.relative(root, file);
  for (const match of readFileSync(file, "utf8").matchAll(IMPORT)) {
    const spec = match[1] ?? match[2] ?? "";
    if (/(^|\/)http\//.test(spec) && spec.startsWith(".")) problems.push(`${rel}: trpc/ imports http/: ${spec}`);
  }
}

// Self-contained: code and docs cite docs/<file>.md, never a file beside the repository (built
// from parts so this file does not match itself).
const OUTSIDE = [
  new RegExp(["\\.\\.", "shared"].join("/")),
  new RegExp(`/${"work"}/`),
  new RegExp(`\\b(?:${["SPEC", "CONTRACT", "STYLE"].join("|")})\\.md\\b`),
];
const walkText = (dir: string): string[] =>
  readdirSync(dir).flatMap((name) => {
    if (name === "node_modules" || name.startsWith(".")) return [];
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return walkText(full);
    return /\.(ts|md|json)$/.test(name) && name !== "package-lock.json" ? [full] : [];
  });
for (const file of walkText(root)) {
  const rel = path.relative(root, file);
  readFileSync(file, "utf8")
    .split("\n")
    .forEach((line, i) => {
      if (OUTSIDE.some((re) => re.test(line))) problems.push(`${rel}:${i + 1}: points outside the repository`);
    });
}

// Test support lives in `testing/` folders (docs/contributing.md "Naming"): a module of apps/ or
// packages/ that only test code imports (test files, `testing/` folders, test/, bench/) is test
// support in the wrong folder, or dead code. Production code never imports vitest.
const workspaces = ["apps", "packages"].flatMap((dir) =>
  existsSync(path.join(root, dir)) ? readdirSync(path.join(root, dir)).map((name) => path.join(root, dir, name)) : [],
);
const exportsOf = new Map<string, { dir: string; exports: Record<string, string> }>();
for (const dir of workspaces) {
  const manifest = path.join(dir, "package.json");
  if (!existsSync(manifest)) continue;
  const pkg = JSON.parse(readFileSync(manifest, "utf8")) as { name?: string; exports?: Record<string, string> };
  if (pkg.name) exportsOf.set(pkg.name, { dir, exports: pkg.exports ?? {} });
}
const resolveImport = (from: string, spec: string): string | undefined => {
  if (spec.startsWith(".")) {
    const target = path.resolve(path.dirname(from), spec);
    return [target, `${target}.ts`, path.join(target, "index.ts")].find((f) => existsSync(f) && statSync(f).isFile());
  }
  const name = spec.startsWith("@") ? spec.split("/").slice(0, 2).join("/") : (spec.split("/")[0] ?? spec);
  const pkg = exportsOf.get(name);
  if (!pkg) return undefined;
  const sub = `.${spec.slice(name.length)}`;
  for (const [key, value] of Object.entries(pkg.exports)) {
    const star = key.indexOf("*");
    if (star < 0 ? key === sub : sub.startsWith(key.slice(0, star)) && sub.endsWith(key.slice(star + 1))) {
      const middle = star < 0 ? "" : sub.slice(star, sub.length - (key.length - star - 1));
      return path.join(pkg.dir, value.replace("*", middle));
    }
  }
  return undefined;
};
const isTestSide = (rel: string) =>
  isTestFile(rel) || rel.startsWith("test/") || rel.startsWith("bench/") || rel.startsWith("scripts/");
const importers = new Map<string, Set<string>>();
const codeFiles = [...workspaces, path.join(root, "test"), path.join(root, "bench"), path.join(root, "scripts")]
  .flatMap((dir) => walk(dir))
  .map((file) => path.relative(root, file));
for (const rel of codeFiles) {
  const source = readFileSync(path.join(root, rel), "utf8");
  for (const match of source.matchAll(IMPORT)) {
    const spec = match[1] ?? match[2] ?? "";
    if (spec === "vitest" && !isTestSide(rel) && !rel.endsWith("vitest.config.ts")) {
      problems.push(`${rel}: production code imports vitest`);
    }
    const target = resolveImport(path.join(root, rel), spec);
    if (!target) continue;
    const targetRel = path.relative(root, target);
    if (targetRel === rel) continue;
    importers.set(targetRel, (importers.get(targetRel) ?? new Set()).add(rel));
  }
}
for (const rel of codeFiles) {
  if (isTestSide(rel)) continue;
  const from = [...(importers.get(rel) ?? [])];
  if (from.length > 0 && from.every(isTestSide)) {
    problems.push(`${rel}: only test code imports it (${from[0]}): test support belongs in a testing/ folder`);
  }
}

// SQL lives in the persistence package (docs/architecture.md "Layers inside the API"): a string
// literal that is an SQL statement (it begins with select ... from, insert into, update ... set,
// delete from, with ... as (, create/alter/drop of a schema object, or truncate) may appear in
// production code only in packages/db's repositories/ and migrations/, and in the few modules of
// packages/db that own what no repository does (connections, cluster leases, pg-boss's job table,
// NOTIFY). Tests and `testing/` folders may read and plant rows with SQL. Keywords in lower or upper
// case count ("Select one from the list" is prose).
const SQL_HOMES = [
  "packages/db/src/repositories/",
  "packages/db/src/migrations/",
  "packages/db/src/database.ts",
  "packages/db/src/jobs/",
  "packages/db/src/metrics/cluster-metrics.ts",
  "packages/db/src/metrics/job-metrics.ts",
  "packages/db/src/status-feed.ts",
];
const SQL_STATEMENT =
  /^\s*(?:select\b[\s\S]*?\bfrom\b|insert\s+into\b|update\s+[\w."]+\s+set\b|delete\s+from\b|with\s+\w+\s+as\s*\(|(?:create|alter|drop)\s+(?:or\s+replace\s+)?(?:unique\s+)?(?:table|index|trigger|function|extension|schema|type|view)\b|truncate\b)/;
const STRING_LITERAL = /`(?:[^`\\]|\\.)*`|"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'/g;
const stripComments = (source: string) => source.replace(/^\s*\/\/.*$|\/\*[\s\S]*?\*\//gm, "");
for (const rel of codeFiles) {
  if (isTestSide(rel) || SQL_HOMES.some((home) => rel.startsWith(home))) continue;
  const code = stripComments(readFileSync(path.join(root, rel), "utf8"));
  for (const [literal] of code.matchAll(STRING_LITERAL)) {
    // SQL is written in lower case here; upper-case keywords count too, capitalized prose does not.
    if (SQL_STATEMENT.test(literal.slice(1, -1).replace(/\b[A-Z]+\b/g, (word) => word.toLowerCase()))) {
      problems.push(`${rel}: SQL outside packages/db's repositories: ${literal.slice(0, 40).replace(/\s+/g, " ")}`);
      break;
    }
  }
}

// Audit entries are written by the audit log's module alone (docs/architecture.md "Layers inside the
// API"): a repository reads and writes its own tables, and the service that decides an audit entry
// writes it through `insertAuditEntry`/`insertAuditEntries` in its transaction. So an insert into
// `audit_log` appears in production code only in the audit-log repository (and the migrations).
const AUDIT_HOMES = ["packages/db/src/repositories/audit-log.repository.ts", "packages/db/src/migrations/"];
const AUDIT_INSERT = /\binsert\s+into\s+"?audit_log"?/i;
for (const rel of codeFiles) {
  if (isTestSide(rel) || AUDIT_HOMES.some((home) => rel.startsWith(home))) continue;
  const code = stripComments(readFileSync(path.join(root, rel), "utf8"));
  if (AUDIT_INSERT.test(code)) {
    problems.push(`${rel}: audit entries written outside the audit-log repository (call insertAuditEntry)`);
  }
}

// Tests wait for a condition, never for a fixed time, and are never retried (docs/contributing.md
// "Tests"): no `retry:` option, and no promise that a timer resolves (`new Promise((r) =>
// setTimeout(r, n))`, `await setTimeout(n)` of node:timers/promises, `await sleep(n)`) outside the
// one waiting helper, `eventually`. A timer that stands for work in a fake (a handler that takes a
// while), not for a wait of the test, says so on its line: `// work, not a wait`. vitest's own
// waiters (`expect.poll`, `vi.waitFor`) are refused too: one helper, one timeout policy.
const WAIT_HELPERS = new Set(["packages/shared/src/testing/eventually.ts"]);
const SLEEP = [
  /new\s+Promise(?:<[^>]*>)?\s*\(\s*\(?\s*(\w+)\s*\)?\s*=>\s*\{?\s*setTimeout\s*\(\s*\1\s*,/,
  /\bawait\s+(?:setTimeout|sleep|delay)\s*\(/,
];
const testCode = [
  ...codeFiles,
  ...(existsSync(path.join(root, "vitest.config.ts")) ? ["vitest.config.ts"] : []),
].filter((rel) => isTestFile(rel) || rel.startsWith("test/") || rel === "vitest.config.ts");
for (const rel of testCode) {
  const lines = readFileSync(path.join(root, rel), "utf8").split("\n");
  lines.forEach((line, i) => {
    if (/^\s*(?:\/\/|\*)/.test(line)) return;
    if (/\bretry\s*:\s*\d/.test(line))
      problems.push(`${rel}:${i + 1}: a retried test (wait for the condition instead)`);
    if (/\bexpect\.poll\s*\(|\bvi\.waitFor\s*\(/.test(line))
      problems.push(`${rel}:${i + 1}: a second waiting helper (wait with eventually from @fleet/shared/testing)`);
    const exempt = WAIT_HELPERS.has(rel) || line.includes("// work, not a wait");
    if (!exempt && SLEEP.some((re) => re.test(line))) {
      problems.push(`${rel}:${i + 1}: a fixed sleep in a test (wait for a condition with eventually)`);
    }
  });
}

if (problems.length > 0) {
  process.stderr.write(`Boundary rules broken:\n${problems.map((p) => `  - ${p}`).join("\n")}\n`);
  process.exit(1);
}
process.stdout.write("Boundary rules hold.\n");
