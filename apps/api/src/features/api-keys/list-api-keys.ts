import { ZApiKey } from "@fleet/shared";
import { z } from "zod";
import { authedProcedure } from "../../trpc/init.ts";

export const listApiKeys = authedProcedure("account:read")
  .meta({
    openapi: {
      method: "GET",
      path: "/v1/api-keys",
      tags: ["api keys"],
      summary: "List the organization's API keys (never the keys themselves)",
    },
    successStatus: 200,
  })
  .input(z.void())
  .output(z.array(ZApiKey))
  .query(({ ctx }) => ctx.services.apiKeys.list(ctx.auth.organizationId));
