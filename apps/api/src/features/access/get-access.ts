import { ZAccessOne, ZAccessPath } from "@fleet/shared";
import { teamProcedure } from "../../trpc/init.ts";

export const getAccess = teamProcedure("routers:read")
  .meta({
    openapi: {
      method: "GET",
      path: "/api/routers/{router_id}/access/{id}",
      tags: ["router access"],
      summary: "One temporary access session (no password)",
    },
    successStatus: 200,
  })
  .input(ZAccessPath)
  .output(ZAccessOne)
  .query(async ({ ctx, input }) => ({
    status: "success" as const,
    data: await ctx.services.access.get(ctx.teamId, input.router_id, input.id),
  }));
