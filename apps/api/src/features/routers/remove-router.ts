import { auditOrigin } from "../../trpc/audit-origin.ts";
import { ZNoContent, ZRouterIdInput } from "@fleet/shared";
import { teamProcedure } from "../../trpc/init.ts";

export const removeRouter = teamProcedure("routers:write")
  .meta({
    openapi: {
      method: "DELETE",
      path: "/api/routers/{router_id}",
      tags: ["routers"],
      summary: "Remove a router and revoke its heartbeat token",
      successDescription: "No Content",
    },
    successStatus: 204,
    rest: { errors: [402, 409, 502] },
  })
  .input(ZRouterIdInput)
  .output(ZNoContent)
  .mutation(({ ctx, input }) => ctx.services.routers.remove(ctx.teamId, input.router_id, auditOrigin(ctx)));
