import type { ForwardTargetsRepository, RelayTarget } from "@fleet/db";
import { type Clock, coalescingRunner, type TunnelNetwork, tunnelAddressProblem } from "@fleet/shared";
import type { Logger } from "pino";
import type { EntryPointRelay } from "./relay.ts";

export interface RelaySyncOptions {
  relay: EntryPointRelay;
  forwards: ForwardTargetsRepository;
  /** ENTRY_POINT_HOST: the relay serves the forwards allocated at this entry point. */
  entryPoint: string;
  clock: Clock;
  logger: Logger;
  pollMs: number;
  /** TUNNEL_NETWORK: the relay pipes only to assigned addresses inside it. */
  tunnelNetwork: TunnelNetwork;
  /** More targets served beside the forwards (temporary router access). */
  moreTargets?: (entryPoint: string, now: Date) => Promise<RelayTarget[]>;
}

/**
 * Keeps the relay's listeners equal to the active forwards of its entry point. The API may run in
 * another process, so the forwards table is the source of truth: it is re-read every `pollMs`
 * (~500 ms), and at once when this process learns of a change (a finished job, a sweep).
 */
export class RelaySync {
  readonly #o: RelaySyncOptions;
  #timer: NodeJS.Timeout | undefined;
  readonly #syncer = coalescingRunner(
    async () => {
      try {
        const now = this.#o.clock.now();
        const targets = [
          ...(await this.#o.forwards.relayTargets(this.#o.entryPoint, now)),
          ...((await this.#o.moreTargets?.(this.#o.entryPoint, now)) ?? []),
        ];
        if (this.#stopped) return;
        // Forget warnings of forwards no longer active, so the set stays as small as the active set.
        const ids = new Set(targets.map((target) => target.id));
        for (const id of this.#refused) if (!ids.has(id)) this.#refused.delete(id);
        await this.#o.relay.sync(targets.filter((target) => this.#inNetwork(target)));
      } catch (error) {
        this.#o.logger.error({ err: error }, "relay sync failed");
      }
    },
    () => !this.#stopped,
  );
  #stopped = false;

  readonly #refused = new Set<string>();

  constructor(options: RelaySyncOptions) {
    this.#o = options;
  }

  /** The address comes from the router's row; one outside TUNNEL_NETWORK is never connected to (said once). */
  #inNetwork(target: { id: string; tunnelIp: string }): boolean {
    if (tunnelAddressProblem(this.#o.tunnelNetwork, target.tunnelIp) === null) return true;
    if (!this.#refused.has(target.id)) {
      this.#refused.add(target.id);
      this.#o.logger.warn(
        { forwardId: target.id, tunnelIp: target.tunnelIp, tunnelNetwork: this.#o.tunnelNetwork.cidr },
        "forward's router address lies outside TUNNEL_NETWORK; the relay does not serve it",
      );
    }
    return false;
  }

  /** Re-reads the active forwards and applies them; concurrent calls coalesce into one more pass. */
  refresh(): Promise<void> {
    return this.#syncer.run();
  }

  start(): void {
    const tick = () => {
      this.#timer = setTimeout(() => {
        void this.refresh().finally(() => {
          if (!this.#stopped) tick();
        });
      }, this.#o.pollMs);
    };
    tick();
  }

  async close(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#syncer.current();
  }
}
