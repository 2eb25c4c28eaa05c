import { type JobEngine, type JobRecord, queueRouterJob, ROUTER_JOBS_QUEUE } from "@fleet/db";
import { ROUTER_JOB_KINDS, ZReconcileJobPayload } from "@fleet/shared";
import { dropConnections, removeForwardRule } from "../routeros/routeros-commands.ts";
import { type ForwardJobDeps, listingMemo, rulePin } from "./apply-forward.ts";
import { ensureRule, readTaggedRules } from "./forward-rules.ts";
import { jobPayload } from "./job-errors.ts";
import { withRouterSession } from "./router-session.ts";
import { tunnelTarget } from "./tunnel-target.ts";

export interface ReconcileReport {
  removed: string[];
  repaired: string[];
}

/**
 * `router.reconcile`: makes the router's tagged rules equal the active forwards. Rules with our tag
 * and no active forward are removed (a lost removal, a forward that expired while no agent ran);
 * active forwards whose rule is missing or wrong are re-applied. Runs in the router's job queue,
 * so it never races an apply or remove of the same router.
 */
export const reconcileRouterHandler =
  (deps: ForwardJobDeps, report?: (routerId: string, result: ReconcileReport) => void) =>
  async (job: JobRecord): Promise<void> => {
    const routerId = jobPayload(ZReconcileJobPayload, job).router_id;
    const tunnelIp = await deps.forwards.routerTunnelIp(routerId);
    if (!tunnelIp) return;
    const target = tunnelTarget(deps, routerId, tunnelIp);
    const pin = rulePin(deps, tunnelIp);
    const now = deps.clock.now();
    const active = await deps.forwards.activeForRouter(routerId, now);
    // Rules are judged against every forward the device at this address should carry, not just
    // this router row's: a tunnel address that moved must not make routers remove each other's rules.
    const onDevice = await deps.forwards.activeAtTunnel(tunnelIp, now);
    const activeIds = new Set(onDevice.map((f) => f.id));
    const result: ReconcileReport = { removed: [], repaired: [] };
    await withRouterSession(deps.connector, target, async (router) => {
      const rules = await readTaggedRules(router, listingMemo(deps, routerId));
      // A stale rule's port may already serve a newer forward: its connections must survive.
      const activePorts = new Set(onDevice.map((f) => f.port));
      const stale = new Map<string, number>();
      for (const rule of rules) if (!activeIds.has(rule.forwardId)) stale.set(rule.forwardId, rule.dstPort);
      for (const [forwardId, port] of stale) {
        await router.exec(removeForwardRule(forwardId));
        if (Number.isInteger(port) && port >= 1 && port <= 65535 && !activePorts.has(port))
          await router.exec(dropConnections(tunnelIp, port));
        result.removed.push(forwardId);
      }
      for (const forward of active) {
        if ((await ensureRule(router, forward, pin, rules)) !== "present") result.repaired.push(forward.id);
      }
    });
    for (const forward of active) await deps.lifecycle.markApplied(forward.id, deps.clock.now());
    if (result.removed.length > 0 || result.repaired.length > 0) {
      deps.logger.warn({ routerId, ...result }, "reconciliation repaired the router");
    }
    report?.(routerId, result);
  };

/** How far back a closed forward still marks its router for reconciliation. */
export const RECONCILE_WINDOW_MS = 7 * 24 * 3_600_000;

/**
 * Queues one reconcile job per router worth checking. Every agent may call this; a router that
 * already has a reconcile job waiting gets no second one (a rare duplicate from two agents racing
 * is harmless: reconciling is idempotent).
 */
export const scheduleReconciliation = async (
  deps: Pick<ForwardJobDeps, "forwards" | "clock"> & { engine: JobEngine },
): Promise<number> => {
  const now = deps.clock.now();
  const routers = await deps.forwards.routersToReconcile(new Date(now.getTime() - RECONCILE_WINDOW_MS));
  let queued = 0;
  for (const routerId of routers) {
    const waiting = await deps.engine.findJobs(ROUTER_JOBS_QUEUE, {
      data: { kind: ROUTER_JOB_KINDS.reconcile, router_id: routerId },
      queued: true,
    });
    if (waiting.length > 0) continue;
    if (await queueRouterJob(deps.engine, { kind: ROUTER_JOB_KINDS.reconcile, router_id: routerId })) queued++;
  }
  return queued;
};
