import { successEnvelope, ZRouterIdInput, ZRouterMetadata } from "@fleet/shared";
import { teamProcedure } from "../../trpc/init.ts";
import { jsend } from "../../trpc/envelopes.ts";

export const getRouterMetadata = teamProcedure("routers:read")
  .meta({
    openapi: {
      method: "GET",
      path: "/api/routers/{router_id}/metadata",
      tags: ["routers"],
      summary: "Router metadata",
    },
    successStatus: 200,
  })
  .input(ZRouterIdInput)
  .output(successEnvelope(ZRouterMetadata))
  .query(jsend(({ ctx, input }) => ctx.services.routers.metadata(ctx.teamId, input.router_id)));
