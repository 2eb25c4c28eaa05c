import { ZRouterResources, ZRouterResourcesQuery } from "@fleet/shared";
import { jsend } from "../../trpc/envelopes.ts";
import { teamProcedure } from "../../trpc/init.ts";

export const getRouterResources = teamProcedure("routers:read")
  .meta({
    openapi: {
      method: "GET",
      path: "/api/routers/{router_id}/resources",
      tags: ["routers"],
      summary: "A router's CPU, memory, disk, temperature, voltage and ping over time",
      description:
        "`from`/`to`: ISO 8601 date-times (default: the last day at `5m`, 30 days at `1h`); `step`: `5m` (one sample per " +
        "RESOURCE_SAMPLE_SECONDS) or `1h` (average with `min_`/`max_`); at most 10,000 steps.",
    },
    successStatus: 200,
  })
  .input(ZRouterResourcesQuery)
  .output(ZRouterResources)
  .query(jsend(({ ctx, input }) => ctx.services.routerHealth.resources(ctx.teamId, input)));
