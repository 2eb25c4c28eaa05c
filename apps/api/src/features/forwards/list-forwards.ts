import { ZForward, ZRouterPath } from "@fleet/shared";
import { z } from "zod";
import { teamProcedure } from "../../trpc/init.ts";

export const listForwards = teamProcedure("routers:read")
  .meta({
    openapi: {
      method: "GET",
      path: "/api/routers/{router_id}/transient-forwarding",
      tags: ["transient forwarding"],
      summary: "List active transient port forwards",
      description: "Forwards of the router that are neither expired nor revoked. Bare answer (no envelope).",
    },
    successStatus: 200,
  })
  .input(ZRouterPath)
  .output(z.array(ZForward))
  .query(({ ctx, input }) => ctx.services.forwards.list(ctx.teamId, input.router_id));
