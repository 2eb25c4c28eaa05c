import { ZIdPath, ZNoContent } from "@fleet/shared";
import { auditOrigin } from "../../trpc/audit-origin.ts";
import { authedProcedure } from "../../trpc/init.ts";

export const deleteApiKey = authedProcedure("account:write")
  .meta({
    openapi: {
      method: "DELETE",
      path: "/v1/api-keys/{id}",
      tags: ["api keys"],
      summary: "Revoke an API key",
      description: "The key answers 401 from then on.",
    },
    successStatus: 204,
  })
  .input(ZIdPath)
  .output(ZNoContent)
  .mutation(async ({ ctx, input }) => {
    await ctx.services.apiKeys.revoke(ctx.auth.organizationId, input.id, auditOrigin(ctx));
  });
