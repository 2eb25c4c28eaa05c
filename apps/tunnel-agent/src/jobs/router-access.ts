import type { AccessRepository, ForwardTargetsRepository, JobRecord } from "@fleet/db";
import { type Clock, deriveAccessPassword, type TunnelNetwork, ZAccessJobPayload } from "@fleet/shared";
import type { Logger } from "pino";
import {
  addAccessGroup,
  addAccessScheduler,
  addAccessUser,
  removeAccessCommands,
  setAccessGroupPolicy,
} from "../routeros/access-commands.ts";
import type { RouterOsConnector } from "../routeros/routeros-client.ts";
import type { AccessLifecycle } from "./access-lifecycle.ts";
import { jobPayload, PermanentJobError } from "./job-errors.ts";
import { withRouterSession } from "./router-session.ts";
import { tunnelTarget } from "./tunnel-target.ts";

export interface AccessJobDeps {
  access: Pick<AccessRepository, "findForAgent">;
  lifecycle: Pick<AccessLifecycle, "markApplied">;
  forwards: ForwardTargetsRepository;
  connector: RouterOsConnector;
  clock: Clock;
  logger: Logger;
  sshPort: number;
  tunnelNetwork: TunnelNetwork;
  /** ENTRY_POINT_TUNNEL_SOURCE: the only address the temporary user may log in from. */
  tunnelSource: string | undefined;
  /** ACCESS_PASSWORD_KEY: the same key the API derived the shown password with. */
  passwordKey: string;
}

/**
 * `access.apply`: the group (its policy set to exactly the contract's), the temporary user with its
 * derived password, allowed only from the entry point's tunnel source, and the router-side
 * scheduler entry that removes it at `expires_at` (docs/routeros.md "Temporary access").
 */
export const applyAccessHandler =
  (deps: AccessJobDeps) =>
  async (job: JobRecord): Promise<void> => {
    const payload = jobPayload(ZAccessJobPayload, job);
    const found = await deps.access.findForAgent(payload.access_id);
    if (!found) return;
    const { access, tunnelIp } = found;
    const now = deps.clock.now();
    if (access.status !== "active" || access.expiresAt <= now) return;
    if (!deps.tunnelSource) {
      throw new PermanentJobError(
        "ENTRY_POINT_TUNNEL_SOURCE is not set: a temporary user would be reachable from anywhere",
      );
    }
    const target = tunnelTarget(deps, access.routerId, tunnelIp);
    const password = deriveAccessPassword(deps.passwordKey, access.id);
    await withRouterSession(deps.connector, target, async (router) => {
      try {
        await router.exec(addAccessGroup(access.level));
      } catch (error) {
        // A router that has the group already: its policy is set right below.
        if (!/already exists/.test((error as Error).message)) throw error;
      }
      await router.exec(setAccessGroupPolicy(access.level));
      // A retried job may find its user there already: start from nothing.
      for (const command of removeAccessCommands(access.id)) await router.exec(command);
      await router.exec(
        addAccessUser({
          accessId: access.id,
          level: access.level,
          password,
          allowedAddress: deps.tunnelSource as string,
        }),
      );
      await router.exec(addAccessScheduler(access.id, access.expiresAt.getTime() - deps.clock.now().getTime()));
    });
    await deps.lifecycle.markApplied(access.id, deps.clock.now());
    deps.logger.info({ accessId: access.id, routerId: access.routerId, level: access.level }, "router access applied");
  };

/** `access.remove`: logs the user out, removes it and its scheduler entry (all no-ops when gone). */
export const removeAccessHandler =
  (deps: AccessJobDeps) =>
  async (job: JobRecord): Promise<void> => {
    const payload = jobPayload(ZAccessJobPayload, job);
    const tunnelIp = await deps.forwards.routerTunnelIp(payload.router_id);
    if (!tunnelIp) return;
    const target = tunnelTarget(deps, payload.router_id, tunnelIp);
    await withRouterSession(deps.connector, target, async (router) => {
      for (const command of removeAccessCommands(payload.access_id)) await router.exec(command);
    });
    deps.logger.info({ accessId: payload.access_id, routerId: payload.router_id }, "router access removed");
  };
