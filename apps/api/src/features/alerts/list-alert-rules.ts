import { successEnvelope, ZAlertRule } from "@fleet/shared";
import { z } from "zod";
import { authedProcedure } from "../../trpc/init.ts";
import { jsend } from "../../trpc/envelopes.ts";

export const listAlertRules = authedProcedure("routers:read")
  .meta({
    openapi: {
      method: "GET",
      path: "/api/alert-rules",
      tags: ["alert rules"],
      summary: "List the organization's alert rules",
    },
    successStatus: 200,
  })
  .input(z.void())
  .output(successEnvelope(z.array(ZAlertRule)))
  .query(
    jsend(async ({ ctx }) =>
      ctx.services.alertRules.list(ctx.auth.organizationId, await ctx.services.teams.bound(ctx.auth)),
    ),
  );
