import { ZAccount, ZCreateAccountInput } from "@fleet/shared";
import { authedProcedure } from "../../trpc/init.ts";

export const createAccount = authedProcedure("account:write")
  .meta({
    openapi: {
      method: "POST",
      path: "/v1/account",
      tags: ["account"],
      summary: "Create the billing account",
      description: "Reads name, email and address.country; other fields are ignored at creation.",
      successDescription: "Created",
    },
    successStatus: 201,
    rest: { errors: [402, 409, 502] },
  })
  .input(ZCreateAccountInput)
  .output(ZAccount)
  .mutation(({ ctx, input }) => ctx.services.accounts.create(ctx.auth, input));
