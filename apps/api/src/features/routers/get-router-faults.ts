import { successEnvelope, ZFault, ZRouterIdInput } from "@fleet/shared";
import { z } from "zod";
import { teamProcedure } from "../../trpc/init.ts";

export const getRouterFaults = teamProcedure("routers:read")
  .meta({
    openapi: {
      method: "GET",
      path: "/api/routers/{router_id}/faults",
      tags: ["routers"],
      summary: "The last 100 faults, newest first",
    },
    successStatus: 200,
  })
  .input(ZRouterIdInput)
  .output(successEnvelope(z.array(ZFault)))
  .query(async ({ ctx, input }) => ({
    status: "success" as const,
    data: await ctx.services.routers.faults(ctx.teamId, input.router_id),
  }));
