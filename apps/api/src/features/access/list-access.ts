import { ZAccessList, ZRouterPath } from "@fleet/shared";
import { teamProcedure } from "../../trpc/init.ts";

export const listAccess = teamProcedure("routers:read")
  .meta({
    openapi: {
      method: "GET",
      path: "/api/routers/{router_id}/access",
      tags: ["router access"],
      summary: "Active temporary access sessions of the router (no passwords)",
    },
    successStatus: 200,
  })
  .input(ZRouterPath)
  .output(ZAccessList)
  .query(async ({ ctx, input }) => ({
    status: "success" as const,
    data: await ctx.services.access.list(ctx.teamId, input.router_id),
  }));
