import { ZRouterIdInput, ZRouterInterfaces } from "@fleet/shared";
import { jsend } from "../../trpc/envelopes.ts";
import { teamProcedure } from "../../trpc/init.ts";

export const getRouterInterfaces = teamProcedure("routers:read")
  .meta({
    openapi: {
      method: "GET",
      path: "/api/routers/{router_id}/interfaces",
      tags: ["routers"],
      summary: "A router's interfaces: latest state, counters and rates",
    },
    successStatus: 200,
  })
  .input(ZRouterIdInput)
  .output(ZRouterInterfaces)
  .query(jsend(({ ctx, input }) => ctx.services.routerHealth.interfaces(ctx.teamId, input.router_id)));
