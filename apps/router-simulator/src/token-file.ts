import { existsSync, readFileSync, writeFileSync } from "node:fs";
import type { EnrolledRouter } from "./fleet-api.ts";

/** Routers enrolled by earlier runs: JSON `[{router_id, heartbeat_token, name, tunnel_ip}]`. Keep it private. */
export const readTokenFile = (file: string): EnrolledRouter[] => {
  if (!existsSync(file)) return [];
  const parsed: unknown = JSON.parse(readFileSync(file, "utf8"));
  if (!Array.isArray(parsed)) throw new Error(`${file} is not a token file (expected a JSON array)`);
  return parsed.filter(
    (r): r is EnrolledRouter =>
      typeof r === "object" && r !== null && typeof r.router_id === "string" && typeof r.heartbeat_token === "string",
  );
};

export const writeTokenFile = (file: string, routers: readonly EnrolledRouter[]): void => {
  writeFileSync(file, `${JSON.stringify(routers, null, 2)}\n`, { mode: 0o600 });
};
