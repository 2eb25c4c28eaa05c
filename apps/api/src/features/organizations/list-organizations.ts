import { ZOrganizationList } from "@fleet/shared";
import { z } from "zod";
import { authedProcedure } from "../../trpc/init.ts";

export const listOrganizations = authedProcedure(null)
  .meta({
    openapi: {
      method: "GET",
      path: "/v1/organizations",
      tags: ["organizations"],
      summary: "The token's organization and every organization below it",
      description: "Nothing above the token's organization is listed. `role` is the caller's effective role there.",
    },
    successStatus: 200,
  })
  .input(z.void())
  .output(ZOrganizationList)
  .query(({ ctx }) => ctx.services.organizationTree.list(ctx.auth));
