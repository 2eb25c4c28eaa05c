import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { AdoptedFleetEntry } from "./adopted-fleet.ts";

/**
 * Adopted routers kept between runs (docs/routeros.md "Simulator"): their ids, tunnel addresses,
 * identities and RouterOS configuration (the installed heartbeat script carries the router's
 * token, so the file is private, mode 0600).
 */
export const adoptedStateFile = (stateDir: string): string => path.join(stateDir, "adopted-routers.json");

export const readAdoptedState = (file: string): AdoptedFleetEntry[] => {
  if (!existsSync(file)) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, "utf8"));
  } catch {
    throw new Error(`${file} is not a state file of the simulator (not JSON); move it away to start afresh`);
  }
  const routers = (parsed as { routers?: unknown } | null)?.routers;
  if (!Array.isArray(routers)) throw new Error(`${file} is not a state file of the simulator (no routers list)`);
  return routers.filter(
    (r): r is AdoptedFleetEntry =>
      typeof r === "object" &&
      r !== null &&
      typeof r.router_id === "string" &&
      typeof r.tunnel_ip === "string" &&
      typeof r.device === "object" &&
      r.device !== null &&
      (r.version === undefined || typeof r.version === "string"),
  );
};

/** Written to a temporary file first, so a crash never leaves half a file. */
export const writeAdoptedState = (file: string, routers: readonly AdoptedFleetEntry[]): void => {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify({ version: 1, routers }, null, 2)}\n`, { mode: 0o600 });
  renameSync(temporary, file);
};

/** A router's identity from its id: unique, and the same on every run (docs/routeros.md "Simulator"). */
export const identityFor = (routerId: string): string => `sim-${routerId.replaceAll("-", "").slice(0, 8)}`;
