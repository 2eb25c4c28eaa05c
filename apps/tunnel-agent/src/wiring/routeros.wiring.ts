import { loopbackAgentAddress } from "@fleet/shared";
import { resolveAgentKey } from "../routeros/agent-key.ts";
import { DbHostKeyStore } from "../routeros/db-host-key-store.ts";
import type { RouterOsConnector } from "../routeros/routeros-client.ts";
import { SshRouterOsConnector } from "../routeros/ssh-routeros-client.ts";
import type { AgentContext, Wired } from "./wiring.ts";

export interface RouterOsServices {
  /** How every job reaches a router: SSH with the agent's key, host keys pinned in the database. */
  connector: RouterOsConnector;
  /** The public key routers must authorize for `TUNNEL_SSH_USER` (`ssh-ed25519 AAAA...`). */
  publicKey: string;
}

/** The agent's way to routers (docs/routeros.md); `connector` (tests) fakes the router side. */
export const wireRouterOs = (
  { config, db, clock }: AgentContext,
  connector?: RouterOsConnector,
): Wired<RouterOsServices> => {
  const key = resolveAgentKey(config.ssh.keyFile, config.dataDir);
  return {
    services: {
      publicKey: key.publicKey,
      connector:
        connector ??
        new SshRouterOsConnector({
          username: config.ssh.user,
          privateKey: key.privateKey,
          connectTimeoutMs: config.ssh.connectTimeoutMs,
          commandTimeoutMs: config.ssh.commandTimeoutMs,
          hostKeys: new DbHostKeyStore(db, clock),
          localAddress: loopbackAgentAddress(config.tunnelNetwork),
        }),
    },
    schedules: [],
    close: async () => {},
  };
};
