import type { FaultRecord } from "@fleet/db";
import { toFaultResponse, type TRouterStatusEvent } from "@fleet/shared";

/** A fault opened or completed, as the status feed carries it. */
export const toFaultEvent = (fault: FaultRecord & { teamId: string }): TRouterStatusEvent => ({
  type: "fault",
  router_id: fault.routerId,
  team_id: fault.teamId,
  fault: toFaultResponse(fault),
});
