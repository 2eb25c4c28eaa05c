import { readFileSync } from "node:fs";
import path from "node:path";
import { Gauge } from "prom-client";

/** `fleet_build_info`: the version of the code this process runs (the repository's package.json). */
const version = (() => {
  try {
    const file = path.resolve(import.meta.dirname, "../../../../package.json");
    return String((JSON.parse(readFileSync(file, "utf8")) as { version?: unknown }).version ?? "unknown");
  } catch {
    return "unknown";
  }
})();
new Gauge({
  name: "fleet_build_info",
  help: "Always 1; the labels say which version of fleet and of Node.js this process runs.",
  labelNames: ["version", "node_version"] as const,
}).set({ version, node_version: process.versions.node }, 1);
