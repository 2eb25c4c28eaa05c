import { ZRouterTraffic, ZRouterTrafficQuery } from "@fleet/shared";
import { jsend } from "../../trpc/envelopes.ts";
import { teamProcedure } from "../../trpc/init.ts";

export const getRouterTraffic = teamProcedure("routers:read")
  .meta({
    openapi: {
      method: "GET",
      path: "/api/routers/{router_id}/interfaces/{name}/traffic",
      tags: ["routers"],
      summary: "One interface's traffic (bits per second) and errors over time",
      description: "`from`, `to` and `step` as for /resources; a counter reset gives no rate (null), never a spike.",
    },
    successStatus: 200,
  })
  .input(ZRouterTrafficQuery)
  .output(ZRouterTraffic)
  .query(jsend(({ ctx, input }) => ctx.services.routerHealth.traffic(ctx.teamId, input)));
