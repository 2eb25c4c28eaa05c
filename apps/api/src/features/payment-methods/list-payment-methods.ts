import { ZPaymentMethodList } from "@fleet/shared";
import { z } from "zod";
import { authedProcedure } from "../../trpc/init.ts";

export const listPaymentMethods = authedProcedure("account:read")
  .meta({
    openapi: {
      method: "GET",
      path: "/v1/account/payment-methods",
      tags: ["payment methods"],
      summary: "List payment methods",
    },
    successStatus: 200,
    rest: { errors: [402, 404, 409, 502] },
  })
  .input(z.void())
  .output(ZPaymentMethodList)
  .query(({ ctx }) => ctx.services.paymentMethods.list(ctx.auth));
