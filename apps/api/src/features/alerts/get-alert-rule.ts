import { successEnvelope, ZAlertRule, ZIdPath } from "@fleet/shared";
import { authedProcedure } from "../../trpc/init.ts";
import { jsend } from "../../trpc/envelopes.ts";

export const getAlertRule = authedProcedure("routers:read")
  .meta({
    openapi: {
      method: "GET",
      path: "/api/alert-rules/{id}",
      tags: ["alert rules"],
      summary: "One alert rule",
    },
    successStatus: 200,
  })
  .input(ZIdPath)
  .output(successEnvelope(ZAlertRule))
  .query(
    jsend(async ({ ctx, input }) =>
      ctx.services.alertRules.get(ctx.auth.organizationId, input.id, await ctx.services.teams.bound(ctx.auth)),
    ),
  );
