import { successEnvelope, ZAlertRule, ZCreateAlertRuleInput } from "@fleet/shared";
import { authedProcedure } from "../../trpc/init.ts";
import { jsend } from "../../trpc/envelopes.ts";

export const createAlertRule = authedProcedure("routers:write")
  .meta({
    openapi: {
      method: "POST",
      path: "/api/alert-rules",
      tags: ["alert rules"],
      summary: "Create an alert rule",
      description:
        "Which events of which routers reach which channels; `min_offline_seconds` and `quiet_hours` hold notifications back. At most 100 per organization (the 101st: 429).",
    },
    // Another organization's channel, team or router named in the body.
    rest: { errors: [404] },
    successStatus: 201,
  })
  .input(ZCreateAlertRuleInput)
  .output(successEnvelope(ZAlertRule))
  .mutation(
    jsend(async ({ ctx, input }) =>
      ctx.services.alertRules.create(ctx.auth.organizationId, input, await ctx.services.teams.bound(ctx.auth)),
    ),
  );
