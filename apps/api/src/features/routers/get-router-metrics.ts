import { successEnvelope, ZMetric, ZRouterIdInput } from "@fleet/shared";
import { z } from "zod";
import { teamProcedure } from "../../trpc/init.ts";
import { jsend } from "../../trpc/envelopes.ts";

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
  .query(jsend(({ ctx, input }) => ctx.services.routers.metrics(ctx.teamId, input.router_id)));
