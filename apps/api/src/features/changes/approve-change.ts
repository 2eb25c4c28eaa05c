import { successEnvelope, ZChange, ZIdPath } from "@fleet/shared";
import { auditOrigin } from "../../trpc/audit-origin.ts";
import { authedProcedure } from "../../trpc/init.ts";
import { jsend } from "../../trpc/envelopes.ts";

export const approveChange = authedProcedure("organizations:write")
  .meta({
    openapi: {
      method: "POST",
      path: "/api/changes/{id}/approve",
      tags: ["changes"],
      summary: "Approve a change",
      description:
        "A person other than its author, with `organizations:write`; the author gets 403. Not awaiting approval: 409.",
    },
    rest: { errors: [403, 409] },
    successStatus: 200,
  })
  .input(ZIdPath)
  .output(successEnvelope(ZChange))
  .mutation(
    jsend(async ({ ctx, input }) =>
      ctx.services.changes.approve(
        ctx.auth.organizationId,
        input.id,
        auditOrigin(ctx),
        await ctx.services.teams.bound(ctx.auth),
      ),
    ),
  );
