import { successEnvelope, ZListRoutersQuery, ZRouter } from "@fleet/shared";
import { z } from "zod";
import { teamProcedure } from "../../trpc/init.ts";
import { jsend } from "../../trpc/envelopes.ts";

export const listRouters = teamProcedure("routers:read")
  .meta({
    openapi: {
      method: "GET",
      path: "/api/routers",
      tags: ["routers"],
      summary: "List the routers of the token's team",
      description: "`tag` keeps the routers that carry that tag.",
    },
    successStatus: 200,
  })
  .input(ZListRoutersQuery)
  .output(successEnvelope(z.array(ZRouter)))
  .query(jsend(({ ctx, input }) => ctx.services.routers.list(ctx.teamId, input)));
