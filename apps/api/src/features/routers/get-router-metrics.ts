import { successEnvelope, ZMetric, ZRouterIdInput } from "@fleet/shared";
import { z } from "zod";
import { teamProcedure } from "../../trpc/init.ts";

export const getRouterMetrics = teamProcedure("routers:read")
  .meta({
    openapi: {
      method: "GET",
      path: "/api/routers/{router_id}/metrics",
      tags: ["routers"],
      summary: "Hourly downtime for the 24 most recent complete UTC hours, oldest first",
    },
    successStatus: 200,
  })
  .input(ZRouterIdInput)
  .output(successEnvelope(z.array(ZMetric)))
  .query(async ({ ctx, input }) => ({
    status: "success" as const,
    data: await ctx.services.routers.metrics(ctx.teamId, input.router_id),
  }));
