import { ZIdPath, ZNoContent } from "@fleet/shared";
import { auditOrigin } from "../../trpc/audit-origin.ts";
import { authedProcedure } from "../../trpc/init.ts";

export const deleteWebhook = authedProcedure("routers:write")
  .meta({
    openapi: {
      method: "DELETE",
      path: "/api/webhooks/{id}",
      tags: ["webhooks"],
      summary: "Delete a webhook and its delivery log",
    },
    successStatus: 204,
  })
  .input(ZIdPath)
  .output(ZNoContent)
  .mutation(async ({ ctx, input }) => {
    const teamId = await ctx.services.teams.bound(ctx.auth);
    await ctx.services.webhooks.delete(ctx.auth.organizationId, input.id, auditOrigin(ctx), teamId);
  });
