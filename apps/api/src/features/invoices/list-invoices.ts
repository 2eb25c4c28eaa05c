import { ZInvoiceList } from "@fleet/shared";
import { z } from "zod";
import { authedProcedure } from "../../trpc/init.ts";

export const listInvoices = authedProcedure("account:read")
  .meta({
    openapi: {
      method: "GET",
      path: "/v1/account/invoices",
      tags: ["invoices"],
      summary: "List invoices",
      description:
        "Paid and unpaid invoices of the selected organization, newest first, at most the 100 most recent. No pagination.",
    },
    successStatus: 200,
    rest: { errors: [402, 404, 409, 502] },
  })
  .input(z.void())
  .output(ZInvoiceList)
  .query(({ ctx }) => ctx.services.invoices.list(ctx.auth));
