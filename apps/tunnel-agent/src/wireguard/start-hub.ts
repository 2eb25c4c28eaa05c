import { type StatusFeed, type WireguardTunnelEnv, type Clock, ConfigError, wireguardPublicKey } from "@fleet/shared";
import { WireguardPeersRepository, type Database } from "@fleet/db";
import cron from "node-cron";
import type { Logger } from "pino";
import { resolveHubPrivateKey } from "./hub-key.ts";
import { createWireguardDevice } from "./wireguard-interface.ts";
import { WireguardHub } from "./wireguard-hub.ts";
import { type TunnelProbe, tcpTunnelProbe } from "./tunnel-probe.ts";
import type { WireguardDevice } from "./wireguard-device.ts";

export interface StartHubOptions {
  tunnel: WireguardTunnelEnv;
  /** `TUNNEL_NETWORK`'s prefix length: the hub's address carries it, so the whole network routes to the hub. */
  networkPrefix: number;
  dataDir: string;
  db: Database;
  feed: StatusFeed;
  clock: Clock;
  logger: Logger;
  /** node-cron expression (with seconds) of the periodic reconciliation. */
  reconcileCron: string;
  /** How often the last handshakes are read (`tunnel_status`). */
  statusPollMs: number;
  /** Tests: no schedules (they call `reconcile()` and `pollHandshakes()` directly). */
  schedules?: boolean;
  /** Tests: a device instead of creating one. */
  device?: WireguardDevice;
  /** `TUNNEL_SSH_PORT`: the port a router is asked to answer on at its tunnel address (`tunnel_status`). */
  probePort: number;
  /** Tests: instead of a TCP connection to `probePort`. */
  probe?: TunnelProbe;
}

export interface RunningHub {
  hub: WireguardHub;
  /** The hub's public key (base64), which adoption scripts give routers. */
  publicKey: string;
  close(): Promise<void>;
}

/**
 * Starts the management tunnel's hub inside the tunnel agent (docs/architecture.md "The management
 * tunnel"): creates its interface, syncs its peers with the bindings, and schedules the
 * reconciliation and the handshake reading. An interface that cannot be created stops start-up
 * with one line naming TUNNEL_MODE.
 */
export const startWireguardHub = async (o: StartHubOptions): Promise<RunningHub> => {
  const privateKey = resolveHubPrivateKey(o.tunnel.privateKey, o.dataDir);
  let device: WireguardDevice;
  try {
    device =
      o.device ??
      (await createWireguardDevice({
        name: o.tunnel.interfaceName,
        implementation: o.tunnel.implementation,
        privateKey,
        listenPort: o.tunnel.listenPort,
        address: `${o.tunnel.hubAddress}/${o.networkPrefix}`,
        logger: o.logger,
      }));
  } catch (error) {
    throw new ConfigError(
      "TUNNEL_MODE",
      `is wireguard but the hub's interface ${o.tunnel.interfaceName} could not be created (${(error as Error).message}); it needs root (CAP_NET_ADMIN) and Linux WireGuard or wireguard-go, or set TUNNEL_MODE=external`,
    );
  }
  const hub = new WireguardHub({
    device,
    store: new WireguardPeersRepository(o.db),
    db: o.db,
    feed: o.feed,
    clock: o.clock,
    logger: o.logger,
    probe: o.probe ?? tcpTunnelProbe({ port: o.probePort }),
  });
  const tasks: Array<{ stop(): void | Promise<void> }> = [];
  try {
    const report = await hub.start();
    o.logger.info(
      {
        interface: device.name,
        implementation: device.implementation,
        peers: report.peers,
        listenPort: o.tunnel.listenPort,
      },
      "WireGuard hub started",
    );
  } catch (error) {
    // The interface exists; a failed first sync is retried by the hub itself.
    o.logger.error({ err: error }, "WireGuard hub's first peer sync failed; retrying");
  }
  if (o.schedules !== false) {
    tasks.push(
      cron.schedule(o.reconcileCron, () => hub.reconcile().then(() => undefined), {
        noOverlap: true,
        name: `wg-reconcile-${device.name}`,
      }),
    );
    const poll = setInterval(() => {
      hub
        .pollHandshakes()
        .catch((error: unknown) => o.logger.warn({ err: error }, "reading WireGuard handshakes failed"));
    }, o.statusPollMs);
    poll.unref();
    tasks.push({ stop: () => clearInterval(poll) });
  }
  return {
    hub,
    publicKey: wireguardPublicKey(privateKey),
    close: async () => {
      for (const task of tasks) await task.stop();
      hub.close();
      await device.close();
    },
  };
};
