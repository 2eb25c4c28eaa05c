import { ZOemInfoResponse, ZRouterOemInput } from "@fleet/shared";
import { teamProcedure } from "../../trpc/init.ts";
import { jsend } from "../../trpc/envelopes.ts";

export const getRouterOem = teamProcedure("routers:read")
  .meta({
    openapi: {
      method: "GET",
      path: "/api/routers/{router_id}/oem",
      tags: ["routers"],
      summary: "Manufacturer (OEM) information of a router",
      description:
        "Catalogue data for the model the router reports (matched by model, then board name), with port speeds and the vendor's throughput test results. 404 when the router is unknown or no data exists for its model.",
    },
    successStatus: 200,
  })
  .input(ZRouterOemInput)
  .output(ZOemInfoResponse)
  .query(jsend(({ ctx, input }) => ctx.services.oem.forRouter(ctx.teamId, input.router_id)));
