import { ZCreateOrganizationInput, ZOrganization } from "@fleet/shared";
import { auditOrigin } from "../../trpc/audit-origin.ts";
import { authedProcedure } from "../../trpc/init.ts";

export const createOrganization = authedProcedure("organizations:write")
  .meta({
    openapi: {
      method: "POST",
      path: "/v1/organizations",
      tags: ["organizations"],
      summary: "Create a customer organization below the token's organization (or below one of its descendants)",
      description:
        "At most 10 levels and 100 children under any one organization (else 422 naming parent_id). The new organization gets a default team and no billing account: the top of the tree pays.",
      successDescription: "Created",
    },
    successStatus: 201,
    rest: { errors: [404] },
  })
  .input(ZCreateOrganizationInput)
  .output(ZOrganization)
  .mutation(({ ctx, input }) => ctx.services.organizationTree.create(ctx.auth, auditOrigin(ctx), input));
