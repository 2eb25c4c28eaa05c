import type { TokenOwner } from "@fleet/db";
import type { Clock } from "@fleet/shared";
import type { Logger } from "pino";

/** The persistence spending needs (HeartbeatsRepository in production). */
export interface AdoptionSpendStore {
  spendAdoption(routerId: string, tokenHash: string, at: Date): Promise<void>;
}

/**
 * The ack waits at most this long for the write: it is due within 2 s (docs/api.md "Routers and
 * heartbeats"), and a slow or unreachable database must not hold it. The write goes on; until it
 * lands, the router's next heartbeat tries again.
 */
export const SPEND_WAIT_MS = 1_500;

type Spending = TokenOwner & { spending?: Promise<void> };

/**
 * Spends a router's adoption URL with the first heartbeat made with its token, before that
 * heartbeat is acknowledged (docs/routeros.md "Adoption"): from the ack on, the URL answers 410,
 * for a first adoption and a re-adoption alike. The token lookup says whether the router has an
 * unspent URL (`adoptionOpen`); only then is there a write, once per token and process: every other
 * heartbeat pays one property read.
 */
export class AdoptionSpender {
  readonly #store: AdoptionSpendStore;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #waitMs: number;

  constructor(options: { store: AdoptionSpendStore; clock: Clock; logger: Logger; waitMs?: number }) {
    this.#store = options.store;
    this.#clock = options.clock;
    this.#logger = options.logger;
    this.#waitMs = options.waitMs ?? SPEND_WAIT_MS;
  }

  /** Undefined when there is nothing to spend (ack at once); else what the ack waits for. */
  spend(owner: TokenOwner): Promise<void> | undefined {
    if (owner.adoptionOpen !== true) return undefined;
    const o = owner as Spending;
    o.spending ??= this.#store
      .spendAdoption(owner.routerId, owner.tokenHash, this.#clock.now())
      .then(
        () => {
          owner.adoptionOpen = false;
        },
        (error: unknown) => {
          this.#logger.warn(
            { err: error, routerId: owner.routerId },
            "adoption URL not spent; the next heartbeat tries again",
          );
        },
      )
      .finally(() => {
        o.spending = undefined;
      });
    return this.#atMost(o.spending, owner.routerId);
  }

  #atMost(write: Promise<void>, routerId: string): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        this.#logger.warn(
          { routerId, waitMs: this.#waitMs },
          "adoption URL spend is slow; acknowledged before it landed",
        );
        resolve();
      }, this.#waitMs);
      timer.unref();
    });
    return Promise.race([write, late]).finally(() => clearTimeout(timer));
  }
}
