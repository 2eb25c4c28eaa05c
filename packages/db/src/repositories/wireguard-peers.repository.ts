import { sql } from "kysely";
import type { Database, Query } from "../database.ts";
import { plainArray, textArray } from "./pg-arrays.ts";
import { toNumber } from "./sql-values.ts";

/** One bound router as the hub needs it: its key and the one address its peer may use. */
export interface WireguardBinding {
  routerId: string;
  publicKey: string;
  tunnelIp: string;
  /** `ip:port` the hub last saw the router from (null: never), to prime a restarted hub's peer. */
  endpoint: string | null;
}

/**
 * What a heartbeat's `wireguard_public_key` did (docs/routeros.md "The management tunnel"):
 * `bound` the router had no key and now has this one; `unchanged` it already had this one;
 * `changed` it has another key (nothing changed: a security event); `taken` another router holds
 * this key, or the router is gone (nothing changed).
 */
export type WireguardBindOutcome = "bound" | "unchanged" | "changed" | "taken";

/** A peer's latest handshake as the hub read it (null: never). */
export interface HandshakeReading {
  publicKey: string;
  handshakeAt: Date | null;
  /** `ip:port` the peer was last seen from (null: not known; a stored endpoint is then kept). */
  endpoint?: string | null;
  /**
   * When the router last answered at its tunnel address through the tunnel (null/absent: not
   * known; a stored answer is then kept), and which router was probed: it counts only for that
   * router's binding, so a key re-bound meanwhile never inherits another router's answer.
   */
  answered?: { routerId: string; at: Date } | null;
}

/** A router whose `tunnel_status` flipped, with what its audit entry names. */
export interface TunnelTransition {
  routerId: string;
  teamId: string;
  organizationId: string;
  tunnelIp: string | null;
  up: boolean;
}

/**
 * `tunnel_status` is `up` while the last handshake, and the router's last answer at its tunnel
 * address through the tunnel, are younger than this (docs/api.md "Router Metadata").
 */
export const TUNNEL_UP_WINDOW_MS = 180_000;

// Raw: the readings come in as arrays through unnest, and the flip is judged in the statement.
// The previous `up` comes from a self-join (the statement's snapshot), so a flip is known from the
// same statement. Only rows whose handshake or answer moved, whose status flips or whose
// endpoint changed are written (a roaming router, or a new NAT mapping, is rare).
interface TransitionRow {
  router_id: string;
  team_id: string;
  organization_id: string;
  tunnel_ip: string | null;
  up: boolean;
}

const handshakesStatement = (readings: readonly HandshakeReading[], now: Date) => {
  const nowMs = now.getTime();
  return sql<TransitionRow>`
with v as (
  select * from unnest(${textArray(readings.map((r) => r.publicKey))}::text[],
    ${plainArray(readings.map((r) => (r.handshakeAt ? r.handshakeAt.getTime() : null)))}::float8[],
    ${textArray(readings.map((r) => r.endpoint ?? null))}::text[],
    ${textArray(readings.map((r) => r.answered?.routerId ?? null))}::text[],
    ${plainArray(readings.map((r) => (r.answered ? r.answered.at.getTime() : null)))}::float8[])
    as v(public_key, handshake_ms, endpoint, answered_router, answered_ms)
), next as (
  select o.router_id, o.up as was_up,
    greatest(v.handshake_ms, extract(epoch from o.handshake_at) * 1000) as latest_ms,
    greatest(case when v.answered_router = o.router_id::text then v.answered_ms end,
      extract(epoch from o.answered_at) * 1000) as answered_ms,
    coalesce(v.endpoint, o.endpoint) as endpoint
  from v join router_wireguard_peers o on o.public_key = v.public_key
), judged as (
  select n.*, coalesce(n.latest_ms > ${nowMs}::float8 - ${TUNNEL_UP_WINDOW_MS}::float8
    and n.answered_ms > ${nowMs}::float8 - ${TUNNEL_UP_WINDOW_MS}::float8, false) as up
  from next n
), changed as (
  update router_wireguard_peers w set
    handshake_at = to_timestamp(n.latest_ms / 1000.0),
    answered_at = to_timestamp(n.answered_ms / 1000.0),
    up = n.up,
    endpoint = n.endpoint
  from judged n
  where w.router_id = n.router_id
    and (n.latest_ms is distinct from extract(epoch from w.handshake_at) * 1000
      or n.answered_ms is distinct from extract(epoch from w.answered_at) * 1000
      or w.up <> n.up
      or n.endpoint is distinct from w.endpoint)
  returning w.router_id, w.up, n.was_up
), flipped as (
  select c.router_id, c.up from changed c where c.up <> c.was_up
)
select f.router_id, r.team_id, r.organization_id, r.tunnel_ip, f.up from flipped f join routers r on r.id = f.router_id`;
};

/**
 * The management tunnel's bindings (docs/routeros.md "The management tunnel"): the heartbeat daemon
 * binds keys, the hub reads the bindings it keeps its peers equal to and records handshakes.
 */
export class WireguardPeersRepository {
  readonly #db: Database;

  constructor(db: Database) {
    this.#db = db;
  }

  /** Binds `publicKey` to the router unless it has a key or another router holds this one. */
  async bind(routerId: string, publicKey: string, at: Date): Promise<WireguardBindOutcome> {
    // One statement: the insert and the key the router already had see the same snapshot.
    const row = await this.#db.query.kysely
      .with("existing", (db) =>
        db.selectFrom("router_wireguard_peers").select("public_key").where("router_id", "=", routerId),
      )
      .with("inserted", (db) =>
        db
          .insertInto("router_wireguard_peers")
          .columns(["router_id", "public_key", "bound_at"])
          .expression(
            db
              .selectNoFrom((s) => [
                s.cast<string>(s.val(routerId), "uuid").as("router_id"),
                s.cast<string>(s.val(publicKey), "text").as("public_key"),
                s.cast<Date>(s.val(at), "timestamptz").as("bound_at"),
              ])
              .where((w) =>
                w.and([
                  w.not(w.exists(w.selectFrom("existing").select("public_key"))),
                  w.exists(w.selectFrom("routers").select("id").where("id", "=", routerId)),
                ]),
              ),
          )
          .onConflict((oc) => oc.doNothing())
          .returning("router_id"),
      )
      .selectNoFrom((eb) => [
        eb.selectFrom("inserted").select(eb.fn.countAll().as("n")).as("inserted"),
        eb.selectFrom("existing").select("public_key").as("existing_key"),
      ])
      .executeTakeFirstOrThrow();
    if (toNumber(row.inserted ?? 0) > 0) return "bound";
    if (row.existing_key === publicKey) return "unchanged";
    if (row.existing_key) return "changed";
    return "taken";
  }

  /** Every binding of a router that has a tunnel address: the hub's peer set. */
  async bindings(): Promise<WireguardBinding[]> {
    const rows = await this.#db.query.kysely
      .selectFrom("router_wireguard_peers as w")
      .innerJoin("routers as r", "r.id", "w.router_id")
      .select(["w.router_id", "w.public_key", "r.tunnel_ip", "w.endpoint"])
      .where("r.tunnel_ip", "is not", null)
      .$narrowType<{ tunnel_ip: string }>()
      .execute();
    return rows.map((r) => ({
      routerId: r.router_id,
      publicKey: r.public_key,
      tunnelIp: r.tunnel_ip,
      endpoint: r.endpoint,
    }));
  }

  /** The router's bound key, or null (pending). */
  async keyOf(routerId: string): Promise<string | null> {
    const row = await this.#db.query.kysely
      .selectFrom("router_wireguard_peers")
      .select("public_key")
      .where("router_id", "=", routerId)
      .executeTakeFirst();
    return row?.public_key ?? null;
  }

  /**
   * Stores the hub's handshake readings (each peer's endpoint and its router's answer when they
   * changed) and flips `up` where the last handshake or answer crossed the 3-minute window
   * (both recent: up); returns the flips. In the caller's
   * transaction (`query`), which audits them.
   */
  async recordHandshakes(query: Query, readings: readonly HandshakeReading[], now: Date): Promise<TunnelTransition[]> {
    if (readings.length === 0) return [];
    const { rows } = await handshakesStatement(readings, now).execute(query.kysely);
    return rows.map((r) => ({
      routerId: r.router_id,
      teamId: r.team_id,
      organizationId: r.organization_id,
      tunnelIp: r.tunnel_ip,
      up: r.up,
    }));
  }
}
