import { successEnvelope, ZWebhook } from "@fleet/shared";
import { z } from "zod";
import { authedProcedure } from "../../trpc/init.ts";
import { jsend } from "../../trpc/envelopes.ts";

export const listWebhooks = authedProcedure("routers:read")
  .meta({
    openapi: { method: "GET", path: "/api/webhooks", tags: ["webhooks"], summary: "List the organization's webhooks" },
    successStatus: 200,
  })
  .input(z.void())
  .output(successEnvelope(z.array(ZWebhook)))
  .query(
    jsend(async ({ ctx }) =>
      ctx.services.webhooks.list(ctx.auth.organizationId, await ctx.services.teams.bound(ctx.auth)),
    ),
  );
