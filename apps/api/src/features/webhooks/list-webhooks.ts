import { successEnvelope, ZWebhook } from "@fleet/shared";
import { z } from "zod";
import { authedProcedure } from "../../trpc/init.ts";

export const listWebhooks = authedProcedure("routers:read")
  .meta({
    openapi: { method: "GET", path: "/api/webhooks", tags: ["webhooks"], summary: "List the organization's webhooks" },
    successStatus: 200,
  })
  .input(z.void())
  .output(successEnvelope(z.array(ZWebhook)))
  .query(async ({ ctx }) => ({
    status: "success" as const,
    data: await ctx.services.webhooks.list(ctx.auth.organizationId),
  }));
