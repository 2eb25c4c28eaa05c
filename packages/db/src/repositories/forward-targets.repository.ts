import { isUuid } from "@fleet/shared";
import { sql } from "kysely";
import { type Database, queryOf } from "../database.ts";
import { type ForwardRecord, ForwardsRepository, forwardFromRow, type RelayTarget } from "./forwards.repository.ts";
import { toDate, toNumber } from "./sql-values.ts";

const CANONICAL_IPV4_SQL =
  "^(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(\\.(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}$";

/**
 * What the tunnel agent and its relay read about forwards and the routers they go through
 * (docs/api.md "Tunnel agent and entry point"): reads only. The agent's writes go through
 * `ForwardsRepository` in its `ForwardLifecycle`; the API never uses this reader.
 */
export class ForwardTargetsRepository {
  readonly #db: Database;
  constructor(db: Database) {
    this.#db = db;
  }

  /** The earliest `expires_at` among active forwards (the expiry timer sleeps until then). */
  async nextExpiry(): Promise<Date | null> {
    const row = await this.#db.query.kysely
      .selectFrom("forwards")
      .select((eb) => eb.fn.min("expires_at").as("t"))
      .where("status", "=", "active")
      .executeTakeFirst();
    // An aggregate is no entity column: the plugin leaves it as the driver's text.
    const t: unknown = row?.t;
    return t === null || t === undefined ? null : toDate(t);
  }

  /** A forward with its router's current tunnel address, for the agent's job handlers. */
  async findForAgent(id: string): Promise<{ forward: ForwardRecord; tunnelIp: string | null } | null> {
    if (!isUuid(id)) return null;
    const row = await this.#db.query.kysely
      .selectFrom("forwards as f")
      .innerJoin("routers as r", "r.id", "f.router_id")
      .selectAll("f")
      .select("r.tunnel_ip")
      .where("f.id", "=", id)
      .executeTakeFirst();
    if (!row) return null;
    return { forward: forwardFromRow(row), tunnelIp: row.tunnel_ip };
  }

  /**
   * Routers the agent cannot reach: no assigned tunnel address (migration 008 left them without
   * one) or one outside `networkCidr` (TUNNEL_NETWORK changed): the SQL twin of the rule
   * `tunnelAddressProblem` (`@fleet/shared`), for the agent's start-up report.
   */
  async routersWithoutReachableTunnel(
    networkCidr: string,
    limit: number,
  ): Promise<{ count: number; routers: Array<{ id: string; tunnelIp: string | null }> }> {
    // Raw: inet containment and a window count have no typed form; CASE keeps the inet cast away
    // from text that is not a canonical address.
    const { rows } = await sql<{ id: string; tunnel_ip: string | null; total: number }>`
      select r.id, r.tunnel_ip, count(*) over ()::int as total from routers r
      where r.tunnel_ip is null or case when r.tunnel_ip ~ ${CANONICAL_IPV4_SQL}
        then not (r.tunnel_ip::inet << ${networkCidr}::inet) else true end
      order by r.created_at, r.id limit ${limit}::int`.execute(this.#db.query.kysely);
    return {
      count: toNumber(rows[0]?.total ?? 0),
      routers: rows.map((row) => ({ id: row.id, tunnelIp: row.tunnel_ip })),
    };
  }

  /** The router's assigned tunnel address, or null when the router is gone or has none. */
  async routerTunnelIp(routerId: string): Promise<string | null> {
    if (!isUuid(routerId)) return null;
    const row = await this.#db.query.kysely
      .selectFrom("routers")
      .select("tunnel_ip")
      .where("id", "=", routerId)
      .executeTakeFirst();
    return row?.tunnel_ip ?? null;
  }

  /** Forwards of one router that should have a rule right now (not closed, not past expiry), oldest first. */
  activeForRouter(routerId: string, now: Date): Promise<ForwardRecord[]> {
    return new ForwardsRepository(queryOf(this.#db)).listActive(routerId, now);
  }

  /**
   * Active forwards of every router now reachable at `tunnelIp`. Usually one router; after a tunnel
   * address moved between routers, a rule on that device may belong to either row.
   */
  async activeAtTunnel(tunnelIp: string, now: Date): Promise<ForwardRecord[]> {
    const rows = await this.#db.query.kysely
      .selectFrom("forwards as f")
      .innerJoin("routers as r", "r.id", "f.router_id")
      .selectAll("f")
      .where("r.tunnel_ip", "=", tunnelIp)
      .where("f.status", "=", "active")
      .where("f.expires_at", ">", now)
      .orderBy("f.created_at")
      .orderBy("f.id")
      .execute();
    return rows.map(forwardFromRow);
  }

  /**
   * Every forward the relay at `entryPoint` should serve now: active and applied (state `active`).
   * A pending forward gets no listener: until the agent has put its rule on the router (after
   * checking the device's host key), a connection to `tunnel_ip:port` could reach a stale rule of
   * another device at that address (docs/routeros.md "Offboarding").
   */
  async relayTargets(entryPoint: string, now: Date): Promise<RelayTarget[]> {
    const rows = await this.#db.query.kysely
      .selectFrom("forwards as f")
      .innerJoin("routers as r", "r.id", "f.router_id")
      .select(["f.id", "f.port", "f.allow_only_cidr", "f.expires_at", "r.tunnel_ip"])
      .where("f.entry_point", "=", entryPoint)
      .where("f.status", "=", "active")
      .where("f.applied_at", "is not", null)
      .where("f.expires_at", ">", now)
      .where("r.tunnel_ip", "is not", null)
      .$narrowType<{ tunnel_ip: string }>()
      .execute();
    return rows.map((row) => ({
      id: row.id,
      port: row.port,
      allowOnlyCidr: row.allow_only_cidr,
      tunnelIp: row.tunnel_ip,
      expiresAt: row.expires_at,
    }));
  }

  /**
   * Routers whose tagged rules reconciliation should check: any with an active forward, or one
   * closed since `since` (a removal may have failed or been lost). Only routers with a pulse: an
   * offline router cannot be reached, and a job for it would only fail its attempts and land in
   * the dead-letter queue; the first reconciliation after it comes back repairs it.
   */
  async routersToReconcile(since: Date): Promise<string[]> {
    const rows = await this.#db.query.kysely
      .selectFrom("forwards as f")
      .innerJoin("routers as r", "r.id", "f.router_id")
      .innerJoin("router_liveness as l", "l.router_id", "r.id")
      .select("f.router_id")
      .distinct()
      .where("r.tunnel_ip", "is not", null)
      .where("l.has_pulse", "=", true)
      .where((eb) => eb.or([eb("f.status", "=", "active"), eb("f.closed_at", ">=", since)]))
      .execute();
    return rows.map((row) => row.router_id);
  }
}
