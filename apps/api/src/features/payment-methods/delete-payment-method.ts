import { ZDeletePaymentMethodInput, ZNoContent } from "@fleet/shared";
import { authedProcedure } from "../../trpc/init.ts";

export const deletePaymentMethod = authedProcedure("account:write")
  .meta({
    openapi: {
      method: "DELETE",
      path: "/v1/account/payment-methods/{id}",
      tags: ["payment methods"],
      summary: "Delete a payment method",
      description: "The default or only payment method cannot be deleted (409): make another one the default first.",
      successDescription: "No Content",
    },
    successStatus: 204,
    rest: { errors: [402, 409, 502] },
  })
  .input(ZDeletePaymentMethodInput)
  .output(ZNoContent)
  .mutation(({ ctx, input }) => ctx.services.paymentMethods.delete(ctx.auth, input.id));
