import { ZSetupIntent } from "@fleet/shared";
import { z } from "zod";
import { authedProcedure } from "../../trpc/init.ts";

export const createSetupIntent = authedProcedure("account:write")
  .meta({
    openapi: {
      method: "POST",
      path: "/v1/account/setup-intent",
      tags: ["payment methods"],
      summary: "Create a setup intent",
      description:
        "Step 1 of saving a card: complete the intent client-side with the processor's library using publishable_key and client_secret, then save the payment method.",
      successDescription: "Created",
    },
    successStatus: 201,
    rest: { errors: [402, 404, 409, 502] },
    noStore: true,
  })
  .input(z.void())
  .output(ZSetupIntent)
  .mutation(({ ctx }) => ctx.services.paymentMethods.createSetupIntent(ctx.auth));
