import {
  type AuditOrigin,
  type CoverageRecord,
  type Database,
  type DeletedRouter,
  type FaultRecord,
  insertAuditEntry,
  type JobEngine,
  type MaintenanceWindowRecord,
  type NewRouter,
  type Query,
  queueRouterJob,
  type RouterListFilter,
  type RouterListRow,
  type RouterRecord,
  TunnelIpTakenError,
} from "@fleet/db";
import {
  AppError,
  type Clock,
  ROUTER_JOB_KINDS,
  hourlyMetrics,
  isAppError,
  metadataBytes,
  ongoingDowntime,
  ROUTER_LIMITS,
  type StatusFeed,
  type TEnrolledRouter,
  type TPlatformScope,
  type TEnrollRouterInput,
  type TUpdateRouterInput,
  type TFault,
  type TListRoutersInput,
  type TMetric,
  type TRouter,
  type TRouterCounts,
  type TRouterMetadata,
  type TRouterStatusEvent,
  type TUpdateRouterMetadataInput,
  type TunnelNetwork,
  utcHourStart,
} from "@fleet/shared";
import type { Logger } from "pino";
import type { AuthClaims } from "../auth/token-verifier.ts";
import { maintenanceEnd } from "../alerts/router-selection.ts";
import type { AdoptionService } from "./adoption/adoption.service.ts";
import {
  decodeListCursor,
  encodeListCursor,
  toFault,
  toMetadataResponse,
  toMetricResponse,
  toRouterResponse,
} from "./routers.mapper.ts";
import type { ServiceClearance } from "./service-clearance.ts";
import {
  checkRequestedTunnelIp,
  insertWithAllocatedTunnelIp,
  type TunnelAddressStore,
  tunnelIpTaken,
} from "./tunnel-address.ts";

/** The persistence the service needs (RoutersRepository in production). */
export interface RouterStore extends TunnelAddressStore {
  listByTeam(filter: RouterListFilter): Promise<RouterListRow[]>;
  updateTags(teamId: string, routerId: string, tags: readonly string[]): Promise<RouterRecord | null>;
  countByTeam(teamId: string): Promise<{ total: number; online: number }>;
  findInTeam(teamId: string, routerId: string): Promise<RouterRecord | null>;
  insert(input: NewRouter, query: Query): Promise<RouterRecord>;
  deleteInTeam(query: Query, teamId: string, routerId: string): Promise<DeletedRouter | null>;
  quarantineTunnelAddress(
    query: Query,
    teamId: string,
    routerId: string,
    at: Date,
    quarantineUntil: Date,
  ): Promise<void>;
  lockInTeam(query: Query, teamId: string, routerId: string): Promise<RouterRecord | null>;
  setUserMetadata(
    query: Query,
    routerId: string,
    userMetadata: Record<string, unknown>,
    name: string,
  ): Promise<RouterRecord | null>;
  faults(routerId: string, limit: number): Promise<FaultRecord[]>;
  downtimeHours(routerId: string, from: Date, to: Date): Promise<Map<number, number>>;
  coverage(): Promise<CoverageRecord | null>;
}

/** Manufacturer data the metadata answer borrows its image URLs and slug from. */
export interface OemLookup {
  findForRouter(
    model: string | null | undefined,
    boardName: string | null | undefined,
  ): Promise<{ slug: string; banner: string | null; thumbnail: string | null } | null>;
}

export interface RouterServiceDeps {
  routers: RouterStore;
  /**
   * An enrollment's insert and its audit entry commit together; a removal runs in one transaction:
   * quarantine, delete, audit entry and offboarding job.
   */
  db: Pick<Database, "transaction">;
  /** Queues the offboarding job (`router.offboard`) inside that transaction. */
  jobs: JobEngine;
  clearance: ServiceClearance;
  feed: StatusFeed;
  clock: Clock;
  logger: Logger;
  oem?: OemLookup;
  /** docs/routeros.md "Adoption": the heartbeat token and script URL of each enrollment. */
  adoption: AdoptionService;
  /** TUNNEL_NETWORK: enrollment assigns each router a unique address inside it. */
  tunnelNetwork: TunnelNetwork;
  /** TUNNEL_ADDRESS_QUARANTINE_DAYS: a removed router's address is not reassigned for this long (default 30). */
  quarantineDays?: number;
  /** `TUNNEL_MODE`: in `wireguard` mode the metadata carries `tunnel_status` and `tunnel_handshake_at`. */
  tunnelMode?: "external" | "wireguard";
  /** The organization's maintenance windows: a fault opened inside one says `maintenance`. */
  maintenanceWindows?: (organizationId: string) => Promise<MaintenanceWindowRecord[]>;
}

const HOUR_MS = 3_600_000;
/** The platform scope that may choose `tunnel_ip` at enrollment (docs/api.md "Authentication"). */
const TUNNEL_ASSIGN_SCOPE: TPlatformScope = "tunnel:assign";
/** Events a slow subscriber may fall behind by before the oldest are dropped. */
const MAX_QUEUED_EVENTS = 1_000;

const notFound = () => new AppError("not_found", "Router not found.");

/**
 * The router inventory of a team (docs/api.md "Routers", docs/api.md "Routers and heartbeats"): enrollment, removal,
 * metadata, hourly metrics, faults and live status. Every lookup is scoped to the team; unknown,
 * malformed and other teams' ids all answer the same 404.
 */
export class RouterService {
  readonly #deps: RouterServiceDeps;
  readonly #subscriptions = new Set<AbortController>();

  constructor(deps: RouterServiceDeps) {
    this.#deps = deps;
  }

  /**
   * docs/api.md "Listing a fleet": the team's routers, filtered and sorted; without `limit` all of
   * them, with it one page and `next_cursor` (null on the last page).
   */
  async list(teamId: string, input: TListRoutersInput = {}): Promise<{ data: TRouter[]; next_cursor?: string | null }> {
    const sort = input.sort ?? "name";
    const after = input.cursor === undefined ? undefined : decodeListCursor(input.cursor);
    if (after === null || (after && after.sort !== sort)) {
      throw new AppError("validation_failed", "The cursor is not one this API handed out for this sort.", {
        fields: { cursor: ["must be a next_cursor from a previous page of the same sort"] },
      });
    }
    const limit = input.limit;
    // One row more than asked tells whether another page exists.
    const rows = await this.#deps.routers.listByTeam({
      teamId,
      q: input.q,
      status: input.status,
      tag: input.tag,
      sort,
      after,
      limit: limit === undefined ? undefined : limit + 1,
    });
    const now = this.#deps.clock.now();
    const page = limit === undefined ? rows : rows.slice(0, limit);
    const data = page.map((row) => toRouterResponse(row.router, now));
    if (limit === undefined) return { data };
    const last = page.at(-1);
    return { data, next_cursor: rows.length > limit && last ? encodeListCursor(last.position) : null };
  }

  /** docs/api.md "tRPC": the team's router counts (the console's fleet header). */
  async counts(teamId: string): Promise<TRouterCounts> {
    const { total, online } = await this.#deps.routers.countByTeam(teamId);
    return { total, online, offline: total - online };
  }

  /**
   * `PATCH /api/routers/{id}`: the router's own fields (docs/api.md "Routers"). `tags` replaces the
   * list (duplicates collapse, order kept); a field left out is left alone.
   */
  async update(teamId: string, input: TUpdateRouterInput): Promise<TRouter> {
    const updated =
      input.tags !== undefined
        ? await this.#deps.routers.updateTags(teamId, input.router_id, [...new Set(input.tags)])
        : await this.#deps.routers.findInTeam(teamId, input.router_id);
    if (!updated) throw notFound();
    return toRouterResponse(updated, this.#deps.clock.now());
  }

  /** docs/api.md "Routers": one router of the team; unknown, malformed and other teams' ids: 404. */
  async get(teamId: string, routerId: string): Promise<TRouter> {
    const router = await this.#deps.routers.findInTeam(teamId, routerId);
    if (!router) throw notFound();
    return toRouterResponse(router, this.#deps.clock.now());
  }

  /**
   * The tunnel address is the system's to assign (docs/api.md "Routers and heartbeats"): the
   * operator's `tunnel_ip` (checked before the subscription check, so a refused one changes
   * nothing), else a free one of TUNNEL_NETWORK.
   */
  async enroll(
    auth: AuthClaims,
    teamId: string,
    input: TEnrollRouterInput,
    origin: AuditOrigin,
  ): Promise<TEnrolledRouter> {
    const { routers, tunnelNetwork } = this.#deps;
    if (input.tunnel_ip !== undefined && !auth.scopes.has(TUNNEL_ASSIGN_SCOPE)) {
      throw new AppError(
        "forbidden",
        `Only the deployment's operators (scope '${TUNNEL_ASSIGN_SCOPE}') may choose a router's tunnel_ip; leave it out and the system assigns one.`,
      );
    }
    const requested =
      input.tunnel_ip === undefined
        ? undefined
        : await checkRequestedTunnelIp(routers, tunnelNetwork, input.tunnel_ip, this.#deps.clock.now());
    await this.#deps.clearance.ensureClearance(auth.organizationId);
    // The heartbeat token is derived from the adoption URL's token (docs/routeros.md "Adoption").
    const minted = this.#deps.adoption.mint();
    const insert = (tunnelIp: string) =>
      this.#deps.db.transaction(async (query) => {
        const inserted = await routers.insert(
          {
            organizationId: auth.organizationId,
            teamId,
            name: input.name ?? "",
            tokenHash: this.#deps.adoption.heartbeatTokenHash(minted),
            createdAt: this.#deps.clock.now(),
            tunnelIp,
          },
          query,
        );
        await insertAuditEntry(query, {
          organizationId: inserted.organizationId,
          occurredAt: inserted.createdAt,
          action: "router.enrolled",
          actor: origin.actor,
          target: { type: "router", id: inserted.id },
          routerId: inserted.id,
          sourceIp: origin.sourceIp,
          details: { name: inserted.name, team_id: inserted.teamId },
        });
        return inserted;
      });
    const router =
      requested === undefined
        ? await insertWithAllocatedTunnelIp(routers, tunnelNetwork, insert, this.#deps.clock.now())
        : await insert(requested).catch((error: unknown) => {
            throw error instanceof TunnelIpTakenError ? tunnelIpTaken(requested) : error;
          });
    const adoption = await this.#deps.adoption.record(router.id, minted);
    try {
      await this.#deps.clearance.syncQuantity(auth.organizationId);
    } catch (error) {
      // docs/billing.md "Failed payments": a first charge that fails enrolls nothing.
      if (isAppError(error) && error.code === "payment_required") {
        const at = this.#deps.clock.now();
        await this.#deps.db.transaction((query) => this.#deleteRouter(query, teamId, router.id, origin, at));
        throw error;
      }
      this.#deps.logger.error({ err: error }, "subscription quantity sync failed; the next sync repairs it");
    }
    return {
      router: toRouterResponse(router, this.#deps.clock.now()),
      heartbeat_token: minted.heartbeatToken,
      tunnel_ip: router.tunnelIp ?? "",
      adoption,
    };
  }

  /**
   * Deletes the router and revokes its token: daemons drop its sockets when they hear of it. Its
   * tunnel address is quarantined and the offboarding job queued (docs/routeros.md "Offboarding").
   */
  async remove(teamId: string, routerId: string, origin: AuditOrigin): Promise<void> {
    const at = this.#deps.clock.now();
    const quarantineUntil = new Date(at.getTime() + (this.#deps.quarantineDays ?? 30) * 86_400_000);
    const { routers, jobs } = this.#deps;
    const removed = await this.#deps.db.transaction(async (query) => {
      await routers.quarantineTunnelAddress(query, teamId, routerId, at, quarantineUntil);
      const deleted = await this.#deleteRouter(query, teamId, routerId, origin, at);
      if (deleted) {
        await queueRouterJob(jobs, { kind: ROUTER_JOB_KINDS.offboard, router_id: deleted.id }, query);
      }
      return deleted;
    });
    if (!removed) throw notFound();
    await this.#deps.feed
      .publish([{ type: "removed", router_id: removed.id, team_id: teamId }])
      .catch((error) =>
        this.#deps.logger.warn({ err: error }, "router removal not announced; daemons notice at their next flush"),
      );
    await this.#sync(removed.organizationId);
  }

  /** Deletes the router with its `router.removed` entry, in the caller's transaction; null when not in the team. */
  async #deleteRouter(
    query: Query,
    teamId: string,
    routerId: string,
    origin: AuditOrigin,
    at: Date,
  ): Promise<DeletedRouter | null> {
    const deleted = await this.#deps.routers.deleteInTeam(query, teamId, routerId);
    if (deleted) {
      await insertAuditEntry(query, {
        organizationId: deleted.organizationId,
        occurredAt: at,
        action: "router.removed",
        actor: origin.actor,
        target: { type: "router", id: deleted.id },
        routerId: deleted.id,
        sourceIp: origin.sourceIp,
        details: { name: deleted.name },
      });
    }
    return deleted;
  }

  async metadata(teamId: string, routerId: string): Promise<TRouterMetadata> {
    return this.#metadataOf(await this.#find(teamId, routerId));
  }

  /** Merges user keys; `null` removes one. `name` is the router's name. */
  async updateMetadata(teamId: string, input: TUpdateRouterMetadataInput): Promise<TRouterMetadata> {
    const { router_id: routerId, ...patch } = input;
    // Read-modify-write under the router's row lock, so concurrent PATCHes both land; a refusal
    // rolls the transaction back and writes nothing.
    const updated = await this.#deps.db.transaction(async (query) => {
      const current = await this.#deps.routers.lockInTeam(query, teamId, routerId);
      if (!current) return null;
      const userMetadata: Record<string, unknown> = { ...current.userMetadata };
      let name = current.name;
      for (const [key, value] of Object.entries(patch)) {
        if (key === "name") name = String(value);
        else if (value === null) delete userMetadata[key];
        else userMetadata[key] = value;
      }
      if (Object.keys(userMetadata).length > ROUTER_LIMITS.metadataKeys) {
        throw new AppError("validation_failed", `A router keeps at most ${ROUTER_LIMITS.metadataKeys} metadata keys.`, {
          fields: { body: [`must leave at most ${ROUTER_LIMITS.metadataKeys} keys after merging`] },
        });
      }
      if (metadataBytes(userMetadata) > ROUTER_LIMITS.metadataTotalBytes) {
        throw new AppError(
          "validation_failed",
          `A router's metadata is at most ${ROUTER_LIMITS.metadataTotalBytes} bytes of JSON.`,
          {
            fields: { body: [`must leave at most ${ROUTER_LIMITS.metadataTotalBytes} bytes of JSON after merging`] },
          },
        );
      }
      return this.#deps.routers.setUserMetadata(query, routerId, userMetadata, name);
    });
    if (!updated) throw notFound();
    return this.#metadataOf(updated);
  }

  /**
   * The 24 most recent complete UTC hours (docs/api.md "Routers and heartbeats"): stored downtime plus the part of a
   * silence still going on. Time when no daemon was watching is not held against a router.
   */
  async metrics(teamId: string, routerId: string): Promise<TMetric[]> {
    const router = await this.#find(teamId, routerId);
    const now = this.#deps.clock.now();
    const windowEnd = utcHourStart(now);
    const windowStart = new Date(windowEnd.getTime() - ROUTER_LIMITS.metricHours * HOUR_MS);
    const [stored, coverage] = await Promise.all([
      this.#deps.routers.downtimeHours(router.id, windowStart, windowEnd),
      this.#deps.routers.coverage(),
    ]);
    const ongoing = ongoingDowntime(router.lastSeenAt, coverage, now);
    return hourlyMetrics({ now, createdAt: router.createdAt, stored, ongoing, hours: ROUTER_LIMITS.metricHours }).map(
      toMetricResponse,
    );
  }

  /** The last 100 faults, newest first; a fault opened inside a maintenance window covering the router carries `maintenance: true`. */
  async faults(teamId: string, routerId: string): Promise<TFault[]> {
    const router = await this.#find(teamId, routerId);
    const [faults, windows] = await Promise.all([
      this.#deps.routers.faults(router.id, ROUTER_LIMITS.faults),
      this.#deps.maintenanceWindows?.(router.organizationId) ?? Promise.resolve([]),
    ]);
    return faults.map((fault) =>
      windows.length > 0 && maintenanceEnd(windows, router, fault.createdAt)
        ? { ...toFault(fault), maintenance: true }
        : toFault(fault),
    );
  }

  /** has_pulse and fault changes of the team's routers as they happen (routers.onStatus). */
  async *statusEvents(teamId: string, signal: AbortSignal | undefined): AsyncGenerator<TRouterStatusEvent> {
    const stop = new AbortController();
    this.#subscriptions.add(stop);
    const queue: TRouterStatusEvent[] = [];
    let wake: (() => void) | undefined;
    const unsubscribe = this.#deps.feed.subscribe((event) => {
      if (event.team_id !== teamId || event.type === "tunnel_binding") return;
      if (queue.length >= MAX_QUEUED_EVENTS) queue.shift();
      queue.push(event);
      wake?.();
    });
    const onAbort = () => wake?.();
    signal?.addEventListener("abort", onAbort);
    stop.signal.addEventListener("abort", onAbort);
    try {
      while (!signal?.aborted && !stop.signal.aborted) {
        const event = queue.shift();
        if (event) {
          yield event;
          continue;
        }
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        wake = undefined;
      }
    } finally {
      unsubscribe();
      signal?.removeEventListener("abort", onAbort);
      this.#subscriptions.delete(stop);
    }
  }

  /** Ends every open subscription (shutdown), so SSE responses finish instead of holding the server. */
  close(): void {
    for (const subscription of this.#subscriptions) subscription.abort();
  }

  /** docs/api.md "Router Metadata": `slug`, `banner_img` and `thumbnail_img` come from the OEM catalogue. */
  async #metadataOf(router: RouterRecord): Promise<TRouterMetadata> {
    const product = await this.#deps.oem?.findForRouter(router.model, router.boardName).catch(() => null);
    const tunnelNow = this.#deps.tunnelMode === "wireguard" ? this.#deps.clock.now() : undefined;
    return toMetadataResponse(router, product ?? null, tunnelNow);
  }

  async #find(teamId: string, routerId: string): Promise<RouterRecord> {
    const router = await this.#deps.routers.findInTeam(teamId, routerId);
    if (!router) throw notFound();
    return router;
  }

  /** A failed sync is repaired by the next one (it recounts); the router change stands. */
  async #sync(organizationId: string): Promise<void> {
    try {
      await this.#deps.clearance.syncQuantity(organizationId);
    } catch (error) {
      this.#deps.logger.error(
        { err: error, organizationId },
        "subscription quantity sync failed; the next sync repairs it",
      );
    }
  }
}
