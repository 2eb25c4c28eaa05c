import type { JobRecord } from "@fleet/db";
import { ZForwardJobPayload } from "@fleet/shared";
import type { Logger } from "pino";
import { dropConnections, removeForwardRule } from "../routeros/routeros-commands.ts";
import type { ForwardJobDeps } from "./apply-forward.ts";
import { jobPayload, PermanentJobError } from "./job-errors.ts";
import { withRouterSession } from "./router-session.ts";
import { tunnelTarget } from "./tunnel-target.ts";

const build = <T>(what: string, make: () => T): T => {
  try {
    return make();
  } catch (error) {
    throw new PermanentJobError(`${what}: ${(error as Error).message}`);
  }
};

/**
 * `forward.remove`: removes the forward's rule by its tag and drops the connections it carried
 * (docs/api.md "Tunnel agent and entry point"). Removing a rule that is already gone is a no-op on RouterOS, so a retry or
 * a second delivery is harmless.
 */
export const removeForwardHandler =
  (deps: ForwardJobDeps & { logger: Logger }) =>
  async (job: JobRecord): Promise<void> => {
    const payload = jobPayload(ZForwardJobPayload, job);
    const found = await deps.forwards.findForAgent(payload.forward_id);
    const tunnelIp = found?.tunnelIp ?? (await deps.forwards.routerTunnelIp(payload.router_id));
    if (!tunnelIp) {
      deps.logger.info(
        { forwardId: payload.forward_id },
        "router gone or without an assigned tunnel address; nothing to remove",
      );
      return;
    }
    const target = tunnelTarget(deps, payload.router_id, tunnelIp);
    const remove = build("remove command", () => removeForwardRule(payload.forward_id));
    // The port may already serve a newer forward on this device (ports are reused once free):
    // then its connections are that forward's and stay.
    const reused =
      found !== null &&
      (await deps.forwards.activeAtTunnel(tunnelIp, deps.clock.now())).some((f) => f.port === found.forward.port);
    const drop =
      found && !reused ? build("drop command", () => dropConnections(tunnelIp, found.forward.port)) : undefined;
    await withRouterSession(deps.connector, target, async (router) => {
      await router.exec(remove);
      if (drop) await router.exec(drop);
    });
    deps.logger.info({ forwardId: payload.forward_id, routerId: payload.router_id }, "forward removed from router");
  };
