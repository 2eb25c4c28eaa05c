import { successEnvelope, ZChangeRouter, ZIdPath } from "@fleet/shared";
import { z } from "zod";
import { authedProcedure } from "../../trpc/init.ts";
import { jsend } from "../../trpc/envelopes.ts";

export const listChangeRouters = authedProcedure("routers:read")
  .meta({
    openapi: {
      method: "GET",
      path: "/api/changes/{id}/routers",
      tags: ["changes"],
      summary: "Per router results of a change",
      description: "In dispatch order (wave 0: the canaries): state, the executor's step, output and timings.",
    },
    successStatus: 200,
  })
  .input(ZIdPath)
  .output(successEnvelope(z.array(ZChangeRouter)))
  .query(
    jsend(async ({ ctx, input }) =>
      ctx.services.changes.routers(ctx.auth.organizationId, input.id, await ctx.services.teams.bound(ctx.auth)),
    ),
  );
