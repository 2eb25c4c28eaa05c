import { ZListRoutersInput, ZRouterList } from "@fleet/shared";
import { teamProcedure } from "../../trpc/init.ts";
import { jsend } from "../../trpc/envelopes.ts";

export const listRouters = teamProcedure("routers:read")
  .meta({
    openapi: {
      method: "GET",
      path: "/api/routers",
      tags: ["routers"],
      summary: "List the routers of the token's team",
      description:
        "Without `limit`, every router; with `limit` (1..500) one page and `next_cursor` (pass it back as `cursor`). " +
        "`q`, `status` and `sort` filter and order the list either way.",
    },
    successStatus: 200,
  })
  .input(ZListRoutersInput)
  .output(ZRouterList)
  .query(jsend.page(({ ctx, input }) => ctx.services.routers.list(ctx.teamId, input)));
