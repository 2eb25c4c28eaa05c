import { successEnvelope, ZChange, ZIdPath } from "@fleet/shared";
import { auditOrigin } from "../../trpc/audit-origin.ts";
import { authedProcedure } from "../../trpc/init.ts";
import { jsend } from "../../trpc/envelopes.ts";

export const resumeChange = authedProcedure("routers:write")
  .meta({
    openapi: {
      method: "POST",
      path: "/api/changes/{id}/resume",
      tags: ["changes"],
      summary: "Resume a paused change",
      description: "Paused only; otherwise 409.",
    },
    rest: { errors: [409] },
    successStatus: 200,
  })
  .input(ZIdPath)
  .output(successEnvelope(ZChange))
  .mutation(
    jsend(async ({ ctx, input }) =>
      ctx.services.changes.resume(
        ctx.auth.organizationId,
        input.id,
        auditOrigin(ctx),
        await ctx.services.teams.bound(ctx.auth),
      ),
    ),
  );
