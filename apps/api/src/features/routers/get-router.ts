import { successEnvelope, ZRouter, ZRouterIdInput } from "@fleet/shared";
import { teamProcedure } from "../../trpc/init.ts";
import { jsend } from "../../trpc/envelopes.ts";

export const getRouter = teamProcedure("routers:read")
  .meta({
    openapi: {
      method: "GET",
      path: "/api/routers/{router_id}",
      tags: ["routers"],
      summary: "One router of the token's team",
    },
    successStatus: 200,
  })
  .input(ZRouterIdInput)
  .output(successEnvelope(ZRouter))
  .query(jsend(({ ctx, input }) => ctx.services.routers.get(ctx.teamId, input.router_id)));
