/**
 * The dependency and naming rules of docs/contributing.md ("Dependency rules", "Naming") as a lint:
 * who may import whom, no test code in production code, `process.env` read only by configuration
 * modules, tRPC routers only in `*.routes.ts`, no `ports/` folders, nothing pointing outside the
 * repository. Run by `npm run lint` (and CI).
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";

const root = path.resolve(import.meta.dirname, "..");

interface Area {
  dir: string;
  /** Workspace packages (@fleet/...) this area may import. */
  allowedInternal: string[] | "any";
  /** External packages it may import (undefined: any). */
  allowedExternal?: string[];
}

const AREAS: Area[] = [
  { dir: "packages/shared", allowedInternal: [], allowedExternal: ["zod", "ipaddr.js"] },
  { dir: "packages/db", allowedInternal: ["@fleet/shared"] },
  { dir: "packages/stripe-emulator", allowedInternal: [] },
  { dir: "apps/api", allowedInternal: ["@fleet/shared", "@fleet/db", "@fleet/stripe-emulator"] },
  { dir: "apps/heartbeat-daemon", allowedInternal: ["@fleet/shared", "@fleet/db"] },
  { dir: "apps/tunnel-agent", allowedInternal: ["@fleet/shared", "@fleet/db"] },
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
        if (area.allowedInternal !== "any" && !area.allowedInternal.includes(name)) {
          problems.push(`${rel}: ${area.dir} may not import ${name}`);
        }
        if (!isTestFile(file) && !rel.startsWith("test/") && !rel.startsWith("bench/") && /\/testing$/.test(spec)) {
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

if (problems.length > 0) {
  process.stderr.write(`Boundary rules broken:\n${problems.map((p) => `  - ${p}`).join("\n")}\n`);
  process.exit(1);
}
process.stdout.write("Boundary rules hold.\n");
