import { ZAccessPath, ZNoContent } from "@fleet/shared";
import { auditOrigin } from "../../trpc/audit-origin.ts";
import { teamProcedure } from "../../trpc/init.ts";

export const revokeAccess = teamProcedure("routers:write")
  .meta({
    openapi: {
      method: "DELETE",
      path: "/api/routers/{router_id}/access/{id}",
      tags: ["router access"],
      summary: "Revoke temporary access early",
      description: "Closes the port at once; the router's user is removed and its sessions dropped asynchronously.",
    },
    successStatus: 204,
  })
  .input(ZAccessPath)
  .output(ZNoContent)
  .mutation(async ({ ctx, input }) => {
    await ctx.services.access.revoke(ctx.teamId, input.router_id, input.id, auditOrigin(ctx));
  });
