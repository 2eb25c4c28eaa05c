import { isUuid } from "@fleet/shared";
import type { Query } from "../database.ts";
import { toNumber } from "./sql-values.ts";

/** What a fleet change's executor confirms with (docs/api.md "Changes"): the router's latest heartbeat. */
export interface RouterPulse {
  tunnelIp: string | null;
  /** The latest heartbeat; null before the first. */
  lastSeenAt: Date | null;
  /** As the latest heartbeat reported it (`7.16.2 (stable)`). */
  softwareVersion: string;
}

/**
 * The agent's reads and writes for a fleet change's router steps (docs/api.md "Changes"): the
 * router's liveness whatever its team, and the script's output kept on the step while it waits
 * for its confirmation (the result itself is `ChangeWorkflow.finishChangeRouter`'s).
 */
export class ChangeExecutorRepository {
  readonly #query: Query;
  constructor(query: Query) {
    this.#query = query;
  }

  async pulse(routerId: string): Promise<RouterPulse | null> {
    if (!isUuid(routerId)) return null;
    const [row] = await this.#query<Record<string, unknown>>(
      `select r.tunnel_ip, r.software_version, (extract(epoch from l.last_seen_at) * 1000)::float8 as last_seen_ms
       from routers r left join router_liveness l on l.router_id = r.id where r.id = $1`,
      [routerId],
    );
    if (!row) return null;
    return {
      tunnelIp: row.tunnel_ip === null ? null : String(row.tunnel_ip),
      lastSeenAt: row.last_seen_ms === null ? null : new Date(toNumber(row.last_seen_ms)),
      softwareVersion: String(row.software_version ?? ""),
    };
  }

  /** The latest heartbeat (epoch ms) of each of these routers that has one: one read for many waiting steps. */
  async lastSeen(routerIds: readonly string[]): Promise<Map<string, number>> {
    const ids = routerIds.filter(isUuid);
    if (ids.length === 0) return new Map();
    const rows = await this.#query<{ router_id: string; last_seen_ms: number | string | null }>(
      `select router_id, (extract(epoch from last_seen_at) * 1000)::float8 as last_seen_ms
       from router_liveness where router_id = any($1::uuid[]) and last_seen_at is not null`,
      [ids],
    );
    return new Map(rows.map((r) => [String(r.router_id), toNumber(r.last_seen_ms ?? 0)]));
  }

  async output(changeRouterId: string): Promise<string> {
    if (!isUuid(changeRouterId)) return "";
    const [row] = await this.#query<{ output: string | null }>("select output from change_routers where id = $1", [
      changeRouterId,
    ]);
    return row?.output ?? "";
  }
}
