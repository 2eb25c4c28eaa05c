import { successEnvelope, ZRouter, ZUpdateRouterBody, ZUpdateRouterInput } from "@fleet/shared";
import { teamProcedure } from "../../trpc/init.ts";
import { jsend } from "../../trpc/envelopes.ts";

export const updateRouter = teamProcedure("routers:write")
  .meta({
    openapi: {
      method: "PATCH",
      path: "/api/routers/{router_id}",
      tags: ["routers"],
      summary: "Change the router's own fields",
      description: "`tags` replaces the router's tags: at most 20, each 1-40 characters; duplicates collapse.",
    },
    successStatus: 200,
    rest: { body: ZUpdateRouterBody },
  })
  .input(ZUpdateRouterInput)
  .output(successEnvelope(ZRouter))
  .mutation(jsend(({ ctx, input }) => ctx.services.routers.update(ctx.teamId, input)));
