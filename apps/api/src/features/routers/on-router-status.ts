import { z } from "zod";
import { teamProcedure, trpcStream } from "../../trpc/init.ts";

/**
 * has_pulse flips, faults opened and completed, and routers removed, for the token's team, as they
 * happen: a tRPC subscription over SSE (`httpSubscriptionLink`). Browsers pass the token in
 * `connectionParams` (EventSource cannot send headers). No REST face. It ends (UNAUTHORIZED) within
 * seconds of its API key being revoked, its token expiring or its organization being removed.
 * Over 20 open streams of a credential or 200 of an organization it is refused before it starts
 * (429, http/stream-cap.ts).
 */
export const onRouterStatus = teamProcedure("routers:read")
  .input(z.void())
  .subscription(async function* ({ ctx, signal }) {
    // docs/api.md "Authentication": the stream ends when its credential stops being valid.
    yield* trpcStream(
      ctx.services.streams.guard(ctx.auth, ctx.authorization, signal, (stop) =>
        ctx.services.routers.statusEvents(ctx.teamId, stop),
      ),
    );
  });
