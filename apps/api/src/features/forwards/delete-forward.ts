import { ZForwardPath, ZNoContent } from "@fleet/shared";
import { auditOrigin } from "../../trpc/audit-origin.ts";
import { teamProcedure } from "../../trpc/init.ts";

export const deleteForward = teamProcedure("routers:write")
  .meta({
    openapi: {
      method: "DELETE",
      path: "/api/routers/{router_id}/transient-forwarding/{id}",
      tags: ["transient forwarding"],
      summary: "Revoke a transient port forward early",
      description:
        "Closes the way at once; the router rule is removed asynchronously. Deleting a closed forward is a no-op.",
    },
    successStatus: 204,
  })
  .input(ZForwardPath)
  .output(ZNoContent)
  .mutation(async ({ ctx, input }) => {
    await ctx.services.forwards.delete(ctx.teamId, input.router_id, input.id, auditOrigin(ctx));
  });
