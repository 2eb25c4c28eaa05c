import { isUuid } from "@fleet/shared";
import type { Query } from "../database.ts";
import { textArray } from "./pg-arrays.ts";

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
    const row = await this.#query.kysely
      .selectFrom("routers as r")
      .leftJoin("router_liveness as l", "l.router_id", "r.id")
      .select(["r.tunnel_ip", "r.software_version", "l.last_seen_at"])
      .where("r.id", "=", routerId)
      .executeTakeFirst();
    if (!row) return null;
    return {
      tunnelIp: row.tunnel_ip,
      lastSeenAt: row.last_seen_at,
      softwareVersion: row.software_version,
    };
  }

  /** The latest heartbeat (epoch ms) of each of these routers that has one: one read for many waiting steps. */
  async lastSeen(routerIds: readonly string[]): Promise<Map<string, number>> {
    const ids = routerIds.filter(isUuid);
    if (ids.length === 0) return new Map();
    // Raw: read every tenth of a second while steps wait, its rows as epoch ms (no builder, no
    // per-row pass of the result plugin, no timestamp text to parse).
    const rows = await this.#query<{ router_id: string; ms: unknown }>(
      `select router_id, floor(extract(epoch from last_seen_at) * 1000)::float8 as ms from router_liveness
        where router_id = any($1::uuid[]) and last_seen_at is not null`,
      [textArray(ids)],
    );
    return new Map(rows.map((r) => [r.router_id, Number(r.ms)]));
  }

  async output(changeRouterId: string): Promise<string> {
    if (!isUuid(changeRouterId)) return "";
    const row = await this.#query.kysely
      .selectFrom("change_routers")
      .select("output")
      .where("id", "=", changeRouterId)
      .executeTakeFirst();
    return row?.output ?? "";
  }
}
