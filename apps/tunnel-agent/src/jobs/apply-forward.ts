import { type ForwardTargetsRepository, type JobRecord, ROUTER_JOB_ATTEMPTS } from "@fleet/db";
import { type Clock, type TunnelNetwork, ZForwardJobPayload } from "@fleet/shared";
import type { Logger } from "pino";
import type { RouterOsConnector } from "../routeros/routeros-client.ts";
import { addCommandFor, ensureRule, type RuleListingMemo, type RulePin, readTaggedRules } from "./forward-rules.ts";
import type { ForwardLifecycle } from "./forward-lifecycle.ts";
import { isPermanentJobError, jobPayload } from "./job-errors.ts";
import { withRouterSession } from "./router-session.ts";
import { tunnelTarget } from "./tunnel-target.ts";

export interface ForwardJobDeps {
  forwards: ForwardTargetsRepository;
  /** The agent's state changes of a forward (applied, failed). */
  lifecycle: ForwardLifecycle;
  connector: RouterOsConnector;
  clock: Clock;
  logger: Logger;
  /** TUNNEL_SSH_PORT. */
  sshPort: number;
  /** TUNNEL_NETWORK: the agent connects only to assigned addresses inside it. */
  tunnelNetwork: TunnelNetwork;
  /** ENTRY_POINT_TUNNEL_SOURCE (normalized): every rule's `src-address=`, when set. */
  tunnelSource?: string | undefined;
  /** Which rule listing each router understood (JSON or terse); shared by the handlers of one agent. */
  listingFormats?: RuleListingMemo;
}

/** The matchers every rule of a router at `tunnelIp` carries. */
export const rulePin = (deps: ForwardJobDeps, tunnelIp: string): RulePin => ({
  tunnelIp,
  tunnelSource: deps.tunnelSource,
});

export const listingMemo = (deps: ForwardJobDeps, routerId: string) =>
  deps.listingFormats ? { routerId, formats: deps.listingFormats } : undefined;

/**
 * `forward.apply`: adds the forward's dst-nat rule on its router (docs/api.md "Tunnel agent and entry point"). A forward
 * that closed before the job ran is left alone; its removal job follows in the same router queue.
 */
export const applyForwardHandler =
  (deps: ForwardJobDeps) =>
  async (job: JobRecord): Promise<void> => {
    const payload = jobPayload(ZForwardJobPayload, job);
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
    let outcome: Awaited<ReturnType<typeof ensureRule>>;
    try {
      const target = tunnelTarget(deps, forward.routerId, tunnelIp);
      const pin = rulePin(deps, target.host);
      const add = addCommandFor(forward, pin);
      outcome = await withRouterSession(deps.connector, target, async (router) =>
        ensureRule(router, forward, pin, await readTaggedRules(router, listingMemo(deps, forward.routerId)), add),
      );
    } catch (error) {
      // The last attempt, or one no retry can fix: the forward's real state becomes failed
      // (docs/api.md "Transient Port Forward" `state`), audited as forward.failed.
      if (isPermanentJobError(error) || job.attempts >= ROUTER_JOB_ATTEMPTS) {
        const reason = `the tunnel agent could not add the rule on the router (attempt ${job.attempts}): ${(error as Error).message}`;
        if (await deps.lifecycle.markFailed(forward.id, reason, deps.clock.now())) {
          deps.logger.warn({ forwardId: forward.id, routerId: forward.routerId, reason }, "forward failed");
        }
      }
      throw error;
    }
    await deps.lifecycle.markApplied(forward.id, deps.clock.now());
    deps.logger.info(
      { forwardId: forward.id, routerId: forward.routerId, port: forward.port, outcome },
      "forward applied",
    );
  };
