import { ZAccessList, ZRouterPath } from "@fleet/shared";
import { teamProcedure } from "../../trpc/init.ts";
import { jsend } from "../../trpc/envelopes.ts";

export const listAccess = teamProcedure("routers:read")
  .meta({
    openapi: {
      method: "GET",
      path: "/api/routers/{router_id}/access",
      tags: ["router access"],
      summary: "Active temporary access sessions of the router (no passwords)",
    },
    successStatus: 200,
  })
  .input(ZRouterPath)
  .output(ZAccessList)
  .query(jsend(({ ctx, input }) => ctx.services.access.list(ctx.teamId, input.router_id)));
