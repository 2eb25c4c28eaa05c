import { ZPaymentMethod, ZSavePaymentMethodInput } from "@fleet/shared";
import { authedProcedure } from "../../trpc/init.ts";

/** `POST /v1/account/payment-methods` (docs/api.md "Errors" alias) is routed here by the REST adapter. */
export const savePaymentMethod = authedProcedure("account:write")
  .meta({
    openapi: {
      method: "POST",
      path: "/v1/account/tax",
      tags: ["payment methods"],
      summary: "Save a payment method and make it the default",
      description:
        "Attaches the payment method to the account and makes it the default; sending a method that is already saved only makes it the default. Also served at POST /v1/account/payment-methods.",
      successDescription: "Created",
    },
    successStatus: 201,
    rest: {
      // docs/api.md "Errors": POST /v1/account/payment-methods saves too.
      aliases: [{ method: "POST", path: "/v1/account/payment-methods" }],
      errors: [402, 404, 409, 502],
    },
  })
  .input(ZSavePaymentMethodInput)
  .output(ZPaymentMethod)
  .mutation(({ ctx, input }) => ctx.services.paymentMethods.save(ctx.auth, input.id));
