import { type AdoptionLookup, AdoptionsRepository, type Database, type NewAdoption } from "@fleet/db";
import {
  type AdoptionWireguard,
  AppError,
  adoptionCommand,
  adoptionScript,
  type Clock,
  formatIsoUtc,
  hashHeartbeatToken,
  type StatusFeed,
  type TAdoption,
} from "@fleet/shared";
import type { Logger } from "pino";
import { heartbeatTokenFor, isAdoptionToken, newAdoptionToken } from "./adoption-tokens.ts";

/** The persistence adoption needs (AdoptionsRepository in production). */
export interface AdoptionStore {
  insert(routerId: string, adoption: NewAdoption): Promise<void>;
  find(tokenHash: string): Promise<AdoptionLookup | null>;
}

export interface AdoptionServiceDeps {
  store: AdoptionStore;
  /** Re-adoption replaces the token, clears the tunnel binding and records the URL in one transaction. */
  db: Pick<Database, "transaction">;
  clock: Clock;
  logger: Logger;
  /**
   * Tells every heartbeat daemon process that a router's old token stopped working, and every hub
   * that its tunnel binding is gone (so each drops the router's peer within a second).
   */
  feed: Pick<StatusFeed, "publishTokenReplaced" | "publish">;
  /** `API_PUBLIC_URL`, or where the API listens (known once it is bound). */
  apiPublicUrl: () => string;
  /** `HEARTBEAT_PUBLIC_URL`, or where the heartbeat daemon listens. */
  heartbeatPublicUrl: () => string;
  /** The tunnel agent's public key; undefined while it is not known. */
  agentPublicKey: () => string | undefined;
  intervalMs: number;
  sshUser: string;
  tunnelNetwork: string;
  /** `HEALTH_PING_TARGET`: each heartbeat's ping (docs/routeros.md "Health"); none when undefined. */
  pingTarget?: string | undefined;
  /**
   * `TUNNEL_MODE=wireguard`: what the script's tunnel part is built from (the router's own address
   * comes from its row); `hubPublicKey` is undefined while the hub's key is not known.
   */
  wireguard?: Omit<AdoptionWireguard, "tunnelIp" | "hubPublicKey"> & { hubPublicKey: () => string | undefined };
}

/** docs/routeros.md "Adoption": a script URL works for one hour. */
export const ADOPTION_TTL_MS = 3_600_000;
/**
 * Heartbeats stamped this soon after a re-adoption do not use the new URL up. Daemons refuse the
 * replaced token as soon as they hear of it and never write a heartbeat whose token is no longer the
 * router's (docs/routeros.md "Adoption"), so this only covers clocks of the API and daemon hosts
 * that disagree by a few seconds.
 */
export const REPLACED_TOKEN_GRACE_MS = 10_000;

/** A freshly made adoption: the URL's token and the heartbeat token derived from it. */
export interface MintedAdoption {
  adoptionToken: string;
  heartbeatToken: string;
  createdAt: Date;
  expiresAt: Date;
}

// Deliberately the same few words for every refusal: nothing about the router or why.
const unknownScript = () => new AppError("not_found", "No adoption script here.");
const goneScript = () =>
  new AppError(
    "gone",
    "This adoption link was used or has expired. Ask for a new one with POST /api/routers/{id}/adoption.",
  );

/**
 * One-time adoption of real routers (docs/routeros.md "Adoption"): enrollment and re-adoption mint a
 * URL whose script installs the heartbeat scheduler and the agent's access; the URL stops working at
 * the router's first heartbeat with the token it carries, or after an hour.
 */
export class AdoptionService {
  readonly #deps: AdoptionServiceDeps;

  constructor(deps: AdoptionServiceDeps) {
    this.#deps = deps;
  }

  mint(): MintedAdoption {
    const adoptionToken = newAdoptionToken();
    const createdAt = this.#deps.clock.now();
    return {
      adoptionToken,
      heartbeatToken: heartbeatTokenFor(adoptionToken),
      createdAt,
      expiresAt: new Date(createdAt.getTime() + ADOPTION_TTL_MS),
    };
  }

  /** SHA-256 of the heartbeat token a minted adoption carries: what the router row keeps. */
  heartbeatTokenHash(minted: MintedAdoption): string {
    return hashHeartbeatToken(minted.heartbeatToken);
  }

  /** Stores the URL of a router just enrolled with `minted.heartbeatToken`. */
  async record(routerId: string, minted: MintedAdoption): Promise<TAdoption> {
    // A new router has no other token: every heartbeat after enrollment is made with this one.
    await this.#deps.store.insert(routerId, this.#row(minted, 0));
    return this.answer(minted);
  }

  /** A router that was reset: new heartbeat token (the old one stops working) and a new URL. */
  async reissue(teamId: string, routerId: string): Promise<TAdoption> {
    const minted = this.mint();
    const found = await this.#deps.db.transaction((query) =>
      new AdoptionsRepository(query).reissue(
        teamId,
        routerId,
        this.heartbeatTokenHash(minted),
        this.#row(minted, REPLACED_TOKEN_GRACE_MS),
      ),
    );
    if (!found) throw new AppError("not_found", "Router not found.");
    // The binding is gone with the old token; hubs drop the peer when they hear of it (and at their next reconciliation otherwise).
    await this.#deps.feed
      .publish([{ type: "tunnel_binding", router_id: routerId, team_id: teamId }])
      .catch((error: unknown) => this.#deps.logger.warn({ err: error }, "cleared tunnel binding not announced"));
    // The row already refuses the old token (daemons write only heartbeats made with the router's
    // current token); the notice makes every daemon refuse it at the door and close its sockets.
    await this.#deps.feed
      .publishTokenReplaced([routerId])
      .catch((error) =>
        this.#deps.logger.warn(
          { err: error },
          "token replacement not announced; daemons refuse the old token at their next flush",
        ),
      );
    return this.answer(minted);
  }

  answer(minted: MintedAdoption): TAdoption {
    const url = `${this.#deps.apiPublicUrl()}/api/adoption/${minted.adoptionToken}`;
    return { command: adoptionCommand(url), url, expires_at: formatIsoUtc(minted.expiresAt) };
  }

  /**
   * The script behind a URL. Unknown or malformed tokens: 404. A URL replaced by a newer one, used
   * by a heartbeat, or past `expires_at`: 410. Neither says which router or why.
   */
  async script(adoptionToken: string): Promise<string> {
    if (!isAdoptionToken(adoptionToken)) throw unknownScript();
    const found = await this.#deps.store.find(hashHeartbeatToken(adoptionToken));
    if (!found) throw unknownScript();
    const heartbeatToken = heartbeatTokenFor(adoptionToken);
    const now = this.#deps.clock.now();
    const replaced = found.heartbeatTokenHash !== hashHeartbeatToken(heartbeatToken);
    // The daemon records the first heartbeat with this token before acknowledging it; heartbeats
    // before `countsFrom` were (or may have been) made with an older token.
    const used =
      found.spentAt !== null || (found.lastSeenAt !== null && found.lastSeenAt.getTime() >= found.countsFrom.getTime());
    if (replaced || used || now.getTime() >= found.expiresAt.getTime()) throw goneScript();
    const agentPublicKey = this.#deps.agentPublicKey();
    if (!agentPublicKey) {
      this.#deps.logger.error(
        "adoption script asked for, but the tunnel agent's public key is unknown: set TUNNEL_SSH_PUBLIC_KEY or TUNNEL_SSH_KEY",
      );
      throw new AppError("unavailable", "Adoption scripts are not available yet; try again later.");
    }
    const wireguard = this.#wireguard(found.tunnelIp);
    return adoptionScript({
      ...(wireguard ? { wireguard } : {}),
      routerId: found.routerId,
      routerName: found.routerName,
      heartbeatUrl: `${this.#deps.heartbeatPublicUrl()}/v1/heartbeat`,
      heartbeatToken,
      intervalMs: this.#deps.intervalMs,
      sshUser: this.#deps.sshUser,
      tunnelNetwork: this.#deps.tunnelNetwork,
      agentPublicKey,
      pingTarget: this.#deps.pingTarget,
    });
  }

  #wireguard(tunnelIp: string | null): AdoptionWireguard | undefined {
    const w = this.#deps.wireguard;
    if (!w) return undefined;
    const hubPublicKey = w.hubPublicKey();
    if (!hubPublicKey || !tunnelIp) {
      this.#deps.logger.error(
        { hubKeyKnown: hubPublicKey !== undefined, tunnelIp },
        "adoption script asked for, but the WireGuard hub's public key or the router's tunnel address is unknown: set TUNNEL_WG_PUBLIC_KEY or start the tunnel agent",
      );
      throw new AppError("unavailable", "Adoption scripts are not available yet; try again later.");
    }
    return { ...w, hubPublicKey, tunnelIp };
  }

  #row(minted: MintedAdoption, graceMs: number): NewAdoption {
    return {
      tokenHash: hashHeartbeatToken(minted.adoptionToken),
      createdAt: minted.createdAt,
      expiresAt: minted.expiresAt,
      countsFrom: new Date(minted.createdAt.getTime() + graceMs),
    };
  }
}
