import { z } from "zod";
import { teamProcedure } from "../../trpc/init.ts";

/**
 * has_pulse flips, faults opened and completed, and routers removed, for the token's team, as they
 * happen: a tRPC subscription over SSE (`httpSubscriptionLink`). Browsers pass the token in
 * `connectionParams` (EventSource cannot send headers). No REST face.
 */
export const onRouterStatus = teamProcedure("routers:read")
  .input(z.void())
  .subscription(async function* ({ ctx, signal }) {
    yield* ctx.services.routers.statusEvents(ctx.teamId, signal);
  });
