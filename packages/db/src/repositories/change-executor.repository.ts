import { isUuid } from "@fleet/shared";
import { sql } from "kysely";
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
    const rows = await this.#query.kysely
      .selectFrom("router_liveness")
      .select(["router_id", "last_seen_at"])
      .where((eb) => eb("router_id", "=", eb.fn.any(sql<string[]>`${textArray(ids)}::uuid[]`)))
      .where("last_seen_at", "is not", null)
      .execute();
    return new Map(rows.map((r) => [r.router_id, r.last_seen_at?.getTime() ?? 0]));
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
