import { type TunnelNetwork, tunnelAddressProblem } from "@fleet/shared";
import type { RouterOsTarget } from "../routeros/routeros-client.ts";

/**
 * The only address the agent logs in to: the router's assigned tunnel address from its row
 * (docs/api.md "Routers and heartbeats"), and only when it lies inside TUNNEL_NETWORK, so no row
 * can ever point the agent at the system's own host or some other network. Throws (the job is
 * retried with backoff) otherwise.
 */
export const tunnelTarget = (
  deps: { tunnelNetwork: TunnelNetwork; sshPort: number },
  routerId: string,
  tunnelIp: string | null,
): RouterOsTarget => {
  const problem = tunnelAddressProblem(deps.tunnelNetwork, tunnelIp);
  if (problem === "none" || !tunnelIp) throw new Error(`router ${routerId} has no assigned tunnel address; will retry`);
  if (problem === "outside_network") {
    throw new Error(
      `router ${routerId} has tunnel address ${tunnelIp} outside TUNNEL_NETWORK ${deps.tunnelNetwork.cidr}; refusing to connect`,
    );
  }
  return { routerId, host: tunnelIp, port: deps.sshPort };
};
