import { ZAccount, ZUpdateAccountInput } from "@fleet/shared";
import { authedProcedure } from "../../trpc/init.ts";

/** PATCH; `PUT /v1/account` with the same body is routed here too (docs/api.md shows both). */
export const updateAccount = authedProcedure("account:write")
  .meta({
    openapi: {
      method: "PATCH",
      path: "/v1/account",
      tags: ["account"],
      summary: "Update the billing account",
      description: "Only supplied fields change; an empty string unsets an optional field. PUT is accepted too.",
    },
    successStatus: 200,
    rest: {
      aliases: [{ method: "PUT" }],
      refused: [
        {
          method: "DELETE",
          message: "Billing accounts cannot be deleted through the API. Contact support to close this account.",
        },
      ],
      errors: [402, 404, 409, 502],
    },
  })
  .input(ZUpdateAccountInput)
  .output(ZAccount)
  .mutation(({ ctx, input }) => ctx.services.accounts.update(ctx.auth, input));
