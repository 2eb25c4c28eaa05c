import { isUuid } from "@fleet/shared";
import { type Database, queryOf } from "../database.ts";
import {
  FORWARD_COLUMNS,
  type ForwardRecord,
  ForwardsRepository,
  forwardFromRow,
  type RelayTarget,
} from "./forwards.repository.ts";
import { toDate, toNumber } from "./sql-values.ts";

type Row = Record<string, unknown>;

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
    const rows = await this.#db.query<Row>(`select min(expires_at) as t from forwards where status = 'active'`);
    const t = rows[0]?.t;
    return t === null || t === undefined ? null : toDate(t);
  }

  /** A forward with its router's current tunnel address, for the agent's job handlers. */
  async findForAgent(id: string): Promise<{ forward: ForwardRecord; tunnelIp: string | null } | null> {
    if (!isUuid(id)) return null;
    const rows = await this.#db.query<Row>(
      `select ${FORWARD_COLUMNS}, r.tunnel_ip from forwards f join routers r on r.id = f.router_id where f.id = $1`,
      [id],
    );
    const row = rows[0];
    if (!row) return null;
    return { forward: forwardFromRow(row), tunnelIp: row.tunnel_ip === null ? null : String(row.tunnel_ip) };
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
    // CASE keeps the inet cast away from text that is not a canonical address.
    const where = `r.tunnel_ip is null or case when r.tunnel_ip ~ '${CANONICAL_IPV4_SQL}'
      then not (r.tunnel_ip::inet << $1::inet) else true end`;
    const rows = await this.#db.query<Row>(
      `select r.id, r.tunnel_ip, count(*) over ()::int as total from routers r where ${where}
       order by r.created_at, r.id limit $2::int`,
      [networkCidr, limit],
    );
    return {
      count: toNumber(rows[0]?.total ?? 0),
      routers: rows.map((row) => ({
        id: String(row.id),
        tunnelIp: row.tunnel_ip === null || row.tunnel_ip === undefined ? null : String(row.tunnel_ip),
      })),
    };
  }

  /** The router's assigned tunnel address, or null when the router is gone or has none. */
  async routerTunnelIp(routerId: string): Promise<string | null> {
    if (!isUuid(routerId)) return null;
    const rows = await this.#db.query<Row>(`select tunnel_ip from routers where id = $1`, [routerId]);
    const ip = rows[0]?.tunnel_ip;
    return ip === null || ip === undefined ? null : String(ip);
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
    const rows = await this.#db.query<Row>(
      `select ${FORWARD_COLUMNS} from forwards f join routers r on r.id = f.router_id
       where r.tunnel_ip = $1 and f.status = 'active' and f.expires_at > $2
       order by f.created_at, f.id`,
      [tunnelIp, now],
    );
    return rows.map(forwardFromRow);
  }

  /**
   * Every forward the relay at `entryPoint` should serve now: active and applied (state `active`).
   * A pending forward gets no listener: until the agent has put its rule on the router (after
   * checking the device's host key), a connection to `tunnel_ip:port` could reach a stale rule of
   * another device at that address (docs/routeros.md "Offboarding").
   */
  async relayTargets(entryPoint: string, now: Date): Promise<RelayTarget[]> {
    const rows = await this.#db.query<Row>(
      `select f.id, f.port, f.allow_only_cidr, f.expires_at, r.tunnel_ip
       from forwards f join routers r on r.id = f.router_id
       where f.entry_point = $1 and f.status = 'active' and f.applied_at is not null and f.expires_at > $2
         and r.tunnel_ip is not null`,
      [entryPoint, now],
    );
    return rows.map((row) => ({
      id: String(row.id),
      port: toNumber(row.port),
      allowOnlyCidr: String(row.allow_only_cidr),
      tunnelIp: String(row.tunnel_ip),
      expiresAt: toDate(row.expires_at),
    }));
  }

  /**
   * Routers whose tagged rules reconciliation should check: any with an active forward, or one
   * closed since `since` (a removal may have failed or been lost). Only routers with a pulse: an
   * offline router cannot be reached, and a job for it would only fail its attempts and land in
   * the dead-letter queue; the first reconciliation after it comes back repairs it.
   */
  async routersToReconcile(since: Date): Promise<string[]> {
    const rows = await this.#db.query<Row>(
      `select distinct f.router_id from forwards f join routers r on r.id = f.router_id
         join router_liveness l on l.router_id = r.id
       where r.tunnel_ip is not null and l.has_pulse and (f.status = 'active' or f.closed_at >= $1)`,
      [since],
    );
    return rows.map((row) => String(row.router_id));
  }
}
