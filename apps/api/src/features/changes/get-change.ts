import { successEnvelope, ZChange, ZIdPath } from "@fleet/shared";
import { authedProcedure } from "../../trpc/init.ts";
import { jsend } from "../../trpc/envelopes.ts";

export const getChange = authedProcedure("routers:read")
  .meta({
    openapi: {
      method: "GET",
      path: "/api/changes/{id}",
      tags: ["changes"],
      summary: "One change with its routers counted per state",
    },
    successStatus: 200,
  })
  .input(ZIdPath)
  .output(successEnvelope(ZChange))
  .query(
    jsend(async ({ ctx, input }) =>
      ctx.services.changes.get(ctx.auth.organizationId, input.id, await ctx.services.teams.bound(ctx.auth)),
    ),
  );
