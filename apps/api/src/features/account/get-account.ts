import { ZAccount } from "@fleet/shared";
import { z } from "zod";
import { authedProcedure } from "../../trpc/init.ts";

export const getAccount = authedProcedure("account:read")
  .meta({
    openapi: { method: "GET", path: "/v1/account", tags: ["account"], summary: "Retrieve the billing account" },
    successStatus: 200,
    rest: { errors: [409] },
  })
  .input(z.void())
  .output(ZAccount)
  .query(({ ctx }) => ctx.services.accounts.get(ctx.auth));
