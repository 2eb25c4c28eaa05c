import { successEnvelope, ZFault, ZRouterIdInput } from "@fleet/shared";
import { z } from "zod";
import { teamProcedure } from "../../trpc/init.ts";
import { jsend } from "../../trpc/envelopes.ts";

export const getRouterFaults = teamProcedure("routers:read")
  .meta({
    openapi: {
      method: "GET",
      path: "/api/routers/{router_id}/faults",
      tags: ["routers"],
      summary: "The last 100 faults, newest first",
    },
    successStatus: 200,
  })
  .input(ZRouterIdInput)
  .output(successEnvelope(z.array(ZFault)))
  .query(jsend(({ ctx, input }) => ctx.services.routers.faults(ctx.teamId, input.router_id)));
