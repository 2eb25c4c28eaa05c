import {
  type Database,
  insertAuditEntry,
  type JobRecord,
  SYSTEM_ORIGIN,
  type TunnelAddressesRepository,
} from "@fleet/db";
import { type Clock, offboardingCommands, type TunnelNetwork, ZReconcileJobPayload } from "@fleet/shared";
import type { Logger } from "pino";
import type { HostKeyStore } from "../routeros/host-key-store.ts";
import type { RouterOsConnector } from "../routeros/routeros-client.ts";
import { jobPayload } from "./job-errors.ts";
import { withRouterSession } from "./router-session.ts";
import { tunnelTarget } from "./tunnel-target.ts";

export interface OffboardJobDeps {
  addresses: TunnelAddressesRepository;
  /** The offboarding's record and its `router.offboarded` entry commit in one transaction. */
  db: Pick<Database, "transaction">;
  connector: RouterOsConnector;
  clock: Clock;
  logger: Logger;
  sshPort: number;
  /** TUNNEL_SSH_USER: the user adoption created, removed here. */
  sshUser: string;
  tunnelNetwork: TunnelNetwork;
}

/**
 * `router.offboard` (docs/routeros.md "Offboarding"): the one job that logs in to a removed
 * router's device. It trusts only the host key pinned for that router (or, if it was never
 * pinned, the first one it meets at the quarantined address), removes everything adoption and the
 * agent installed, and then records `router.offboarded`, which ends the address's quarantine.
 * An unreachable device fails the attempt: retried with backoff, then dead-lettered, and the
 * address stays quarantined for TUNNEL_ADDRESS_QUARANTINE_DAYS.
 */
export const offboardRouterHandler =
  (deps: OffboardJobDeps) =>
  async (job: JobRecord): Promise<void> => {
    const routerId = jobPayload(ZReconcileJobPayload, job).router_id;
    const removed = await deps.addresses.removedRouter(routerId);
    if (!removed || removed.offboardedAt) {
      deps.logger.info({ routerId }, "nothing to offboard (never removed, or offboarded already)");
      return;
    }
    if (removed.reassigned) {
      // The quarantine ended and the address is another router's now: its device is not ours to clean.
      deps.logger.warn({ routerId, tunnelIp: removed.tunnelIp }, "address reassigned before offboarding; skipping");
      return;
    }
    const hostKeys: HostKeyStore = {
      get: async () => removed.fingerprint,
      set: async (_id, fingerprint) => {
        const pinned = await deps.addresses.pinRemoved(routerId, fingerprint, deps.clock.now());
        if (pinned !== fingerprint)
          throw new Error(`removed router ${routerId} was pinned to another host key meanwhile`);
      },
    };
    const target = { ...tunnelTarget(deps, routerId, removed.tunnelIp), hostKeys };
    const commands = offboardingCommands(deps.sshUser);
    await withRouterSession(deps.connector, target, async (router) => {
      for (const command of commands) await router.exec(command);
    });
    const now = deps.clock.now();
    const offboarded = await deps.db.transaction(async (query) => {
      const done = await deps.addresses.markOffboarded(query, routerId, now);
      if (done) {
        await insertAuditEntry(query, {
          organizationId: done.organizationId,
          occurredAt: now,
          action: "router.offboarded",
          actor: SYSTEM_ORIGIN.actor,
          sourceIp: null,
          target: { type: "router", id: routerId },
          routerId,
          details: { tunnel_ip: done.tunnelIp, commands: commands.length },
        });
      }
      return done;
    });
    if (offboarded) {
      deps.logger.info({ routerId, tunnelIp: removed.tunnelIp }, "removed router offboarded");
    }
  };
