import { successEnvelope, ZUpdateAlertRuleBody, ZAlertRule, ZUpdateAlertRuleInput } from "@fleet/shared";
import { authedProcedure } from "../../trpc/init.ts";
import { jsend } from "../../trpc/envelopes.ts";

export const updateAlertRule = authedProcedure("routers:write")
  .meta({
    openapi: {
      method: "PATCH",
      path: "/api/alert-rules/{id}",
      tags: ["alert rules"],
      summary: "Change an alert rule",
    },
    successStatus: 200,
    rest: { body: ZUpdateAlertRuleBody },
  })
  .input(ZUpdateAlertRuleInput)
  .output(successEnvelope(ZAlertRule))
  .mutation(
    jsend(async ({ ctx, input }) =>
      ctx.services.alertRules.update(ctx.auth.organizationId, input, await ctx.services.teams.bound(ctx.auth)),
    ),
  );
