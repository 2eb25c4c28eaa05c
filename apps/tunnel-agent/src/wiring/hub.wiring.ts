import { acquireStatusFeed } from "@fleet/db";
import { type RunningHub, startWireguardHub } from "../wireguard/start-hub.ts";
import type { WireguardDevice } from "../wireguard/wireguard-device.ts";
import type { AgentContext, Wired } from "./wiring.ts";

export interface HubServices {
  /** TUNNEL_MODE=wireguard: the management tunnel's hub; undefined in external mode. */
  hub: RunningHub | undefined;
}

/**
 * The WireGuard hub (docs/operations.md "The management tunnel"), wired first: the agent's SSH
 * sessions and the relay reach routers through its interface. `device` (tests) replaces the real
 * interface and leaves out the hub's own schedules.
 */
export const wireHub = async (
  { config, db, logger, clock }: AgentContext,
  device?: WireguardDevice,
): Promise<Wired<HubServices>> => {
  if (config.tunnel.mode !== "wireguard") return { services: { hub: undefined }, schedules: [], close: async () => {} };
  const feedHandle = await acquireStatusFeed(db, (error) => logger.warn({ err: error }, "status feed connection lost"));
  let hub: RunningHub;
  try {
    hub = await startWireguardHub({
      tunnel: config.tunnel,
      networkPrefix: config.tunnelNetwork.prefix,
      dataDir: config.dataDir,
      db,
      feed: feedHandle.feed,
      clock,
      logger: logger.child({ part: "wireguard-hub" }),
      reconcileCron: config.wireguardReconcileCron,
      statusPollMs: config.wireguardStatusPollMs,
      probePort: config.ssh.port,
      ...(device ? { device, schedules: false } : {}),
    });
  } catch (error) {
    await feedHandle.release();
    throw error;
  }
  return {
    services: { hub },
    schedules: [],
    close: async () => {
      await hub.close();
      await feedHandle.release();
    },
  };
};
