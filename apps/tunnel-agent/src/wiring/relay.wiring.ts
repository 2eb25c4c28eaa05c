import { AccessRepository, AuditLogRepository, ForwardTargetsRepository, queryOf } from "@fleet/db";
import { ConnectionLog } from "../entry-point/connection-log.ts";
import { EntryPointRelay } from "../entry-point/relay.ts";
import { RelaySync } from "../entry-point/relay-sync.ts";
import type { AgentContext, AgentSchedule, Wired } from "./wiring.ts";

export interface RelayServices {
  relay: EntryPointRelay;
  /** Re-reads forwards and access sessions into the relay (`refresh()`, also polled). */
  sync: RelaySync;
  /** The relay's connection audit entries, buffered and written every second (`flush()` now). */
  connectionLog: ConnectionLog;
}

/**
 * The entry-point relay (docs/api.md "Tunnel agent and entry point"): a listener per applied forward
 * and temporary access session of this entry point, piped to the router through the tunnel.
 */
export const wireRelay = ({ config, db, logger, clock }: AgentContext): Wired<RelayServices> => {
  const connectionLog = new ConnectionLog({
    store: new AuditLogRepository(db),
    clock,
    logger: logger.child({ part: "relay-audit" }),
  });
  const relay = new EntryPointRelay({
    bind: config.entryPoint.bind,
    proxyProtocol: config.entryPoint.proxyProtocol,
    logger: logger.child({ part: "relay" }),
    events: connectionLog,
  });
  const access = new AccessRepository(queryOf(db));
  // docs/api.md "Temporary router access": the router's own service ports (SSH is the port the agent uses).
  const servicePorts = { winbox: 8291, ssh: config.ssh.port, webfig: 80 } as const;
  const sync = new RelaySync({
    moreTargets: (entryPoint, now) => access.relayTargets(entryPoint, now, servicePorts),
    relay,
    forwards: new ForwardTargetsRepository(db),
    entryPoint: config.entryPoint.host,
    clock,
    logger,
    pollMs: config.relayPollMs,
    tunnelNetwork: config.tunnelNetwork,
  });
  // The poll, started once the first refresh ran in the start-up order.
  const poll: AgentSchedule = {
    start: async () => {
      sync.start();
      return () => sync.close();
    },
  };
  return {
    services: { relay, sync, connectionLog },
    schedules: [poll],
    close: async () => {
      await sync.close();
      await relay.close();
      await connectionLog.close();
    },
  };
};
