/**
 * Durable job kinds of the tunnel agent on a router (the one queue `router.jobs`: forwards,
 * temporary access, backups, reconciliation, offboarding), declared here once and carried typed
 * from the enqueue (packages/db `RouterJobData`) to the agent's handler table.
 */
export const ROUTER_JOB_KINDS = {
  /** Add the forward's dst-nat rule on its router. */
  apply: "forward.apply",
  /** Remove the forward's rule and drop its connections. */
  remove: "forward.remove",
  /** Compare a router's tagged rules with the active forwards and repair both ways. */
  reconcile: "router.reconcile",
  /** Read the router's configuration (`/export terse`) and store it as a new version if it changed. */
  backup: "router.backup",
  /** Create the temporary user, its group and its self-removing scheduler entry (docs/routeros.md "Temporary access"). */
  accessApply: "access.apply",
  /** Log the temporary user out and remove it and its scheduler entry. */
  accessRemove: "access.remove",
  /** Take off the removed router's device what adoption installed (docs/routeros.md "Offboarding"). */
  offboard: "router.offboard",
  /**
   * Run one router's step of a fleet change (docs/api.md "Changes"): payload `{change_router_id}`;
   * the handler resumes at the row's `phase` and reports through `finishChangeRouter`.
   */
  changeApply: "change.apply",
} as const;
export type TRouterJobKind = (typeof ROUTER_JOB_KINDS)[keyof typeof ROUTER_JOB_KINDS];
