import { ZAccessOne, ZAccessPath } from "@fleet/shared";
import { teamProcedure } from "../../trpc/init.ts";
import { jsend } from "../../trpc/envelopes.ts";

export const getAccess = teamProcedure("routers:read")
  .meta({
    openapi: {
      method: "GET",
      path: "/api/routers/{router_id}/access/{id}",
      tags: ["router access"],
      summary: "One temporary access session (no password)",
    },
    successStatus: 200,
  })
  .input(ZAccessPath)
  .output(ZAccessOne)
  .query(jsend(({ ctx, input }) => ctx.services.access.get(ctx.teamId, input.router_id, input.id)));
