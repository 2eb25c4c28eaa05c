import type { ForwardsRepository, JobRecord } from "@fleet/db";
import { type Clock, ZForwardJobPayload } from "@fleet/shared";
import type { Logger } from "pino";
import type { RouterOsConnector } from "../routeros/routeros-client.ts";
import { addCommandFor, ensureRule, readTaggedRules } from "./forward-rules.ts";
import { PermanentJobError } from "./job-errors.ts";
import { withRouterSession } from "./router-session.ts";

export interface ForwardJobDeps {
  forwards: ForwardsRepository;
  connector: RouterOsConnector;
  clock: Clock;
  logger: Logger;
  /** TUNNEL_SSH_PORT. */
  sshPort: number;
}

export const parseForwardPayload = (job: JobRecord) => {
  const parsed = ZForwardJobPayload.safeParse(job.payload);
  if (!parsed.success) throw new PermanentJobError(`job ${job.id} has a malformed payload`);
  return parsed.data;
};

/**
 * `forward.apply`: adds the forward's dst-nat rule on its router (docs/api.md "Tunnel agent and entry point"). A forward
 * that closed before the job ran is left alone; its removal job follows in the same router queue.
 */
export const applyForwardHandler =
  (deps: ForwardJobDeps) =>
  async (job: JobRecord): Promise<void> => {
    const payload = parseForwardPayload(job);
    const found = await deps.forwards.findForAgent(payload.forward_id);
    if (!found) {
      deps.logger.info({ forwardId: payload.forward_id }, "forward no longer exists; nothing to apply");
      return;
    }
    const { forward, tunnelIp } = found;
    if (forward.status !== "active" || forward.expiresAt <= deps.clock.now()) {
      deps.logger.info(
        { forwardId: forward.id, status: forward.status },
        "forward closed before it was applied; skipping",
      );
      return;
    }
    if (!tunnelIp) throw new Error(`router ${forward.routerId} has no tunnel_ip; will retry`);
    addCommandFor(forward);
    const outcome = await withRouterSession(
      deps.connector,
      { routerId: forward.routerId, host: tunnelIp, port: deps.sshPort },
      async (router) => ensureRule(router, forward, await readTaggedRules(router)),
    );
    await deps.forwards.markApplied(forward.id, deps.clock.now());
    deps.logger.info(
      { forwardId: forward.id, routerId: forward.routerId, port: forward.port, outcome },
      "forward applied",
    );
  };
