import { successEnvelope, ZChange, ZIdPath } from "@fleet/shared";
import { auditOrigin } from "../../trpc/audit-origin.ts";
import { authedProcedure } from "../../trpc/init.ts";
import { jsend } from "../../trpc/envelopes.ts";

export const cancelChange = authedProcedure("routers:write")
  .meta({
    openapi: {
      method: "POST",
      path: "/api/changes/{id}/cancel",
      tags: ["changes"],
      summary: "Cancel a change",
      description: "Routers not started are cancelled; running ones finish. Completed or cancelled: 409.",
    },
    rest: { errors: [409] },
    successStatus: 200,
  })
  .input(ZIdPath)
  .output(successEnvelope(ZChange))
  .mutation(
    jsend(async ({ ctx, input }) =>
      ctx.services.changes.cancel(
        ctx.auth.organizationId,
        input.id,
        auditOrigin(ctx),
        await ctx.services.teams.bound(ctx.auth),
      ),
    ),
  );
