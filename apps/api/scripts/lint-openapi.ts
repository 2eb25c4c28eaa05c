/**
 * `npm run lint`: writes the OpenAPI document the API serves (generated from the code, no server,
 * no network) to a temporary file and runs `redocly lint` with the recommended rules on it.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { buildOpenApiDocument } from "../src/http/openapi.ts";
import { appRouter } from "../src/trpc/app-router.ts";

const dir = mkdtempSync(join(tmpdir(), "fleet-openapi-"));
const file = join(dir, "openapi.json");
try {
  writeFileSync(file, JSON.stringify(buildOpenApiDocument(appRouter, "http://localhost:3000"), null, 2));
  const redocly = resolve(import.meta.dirname, "../../../node_modules/.bin/redocly");
  // This Node (24 from the repo), not the machine's: `redocly` is a Node script.
  const result = spawnSync(
    process.execPath,
    [redocly, "lint", "--extends", "recommended", "--format", "stylish", file],
    // The lint script sets REDOCLY_TELEMETRY=off and REDOCLY_SUPPRESS_UPDATE_NOTICE=true: offline.
    { stdio: "inherit" },
  );
  process.exitCode = result.status ?? 1;
} finally {
  rmSync(dir, { recursive: true, force: true });
}
