import { ZCreateApiKeyInput, ZCreatedApiKey } from "@fleet/shared";
import { auditOrigin } from "../../trpc/audit-origin.ts";
import { authedProcedure } from "../../trpc/init.ts";

export const createApiKey = authedProcedure("account:write")
  .meta({
    openapi: {
      method: "POST",
      path: "/v1/api-keys",
      tags: ["api keys"],
      summary: "Create an API key",
      description:
        "For scripts and integrations: `Authorization: Bearer <key>` then works wherever an access token does, for this organization and its default team, with exactly these scopes (never more than your token's). The key is shown only in this answer.",
      successDescription: "Created",
    },
    successStatus: 201,
    noStore: true,
  })
  .input(ZCreateApiKeyInput)
  .output(ZCreatedApiKey)
  .mutation(({ ctx, input }) => ctx.services.apiKeys.create(ctx.auth, auditOrigin(ctx), input));
