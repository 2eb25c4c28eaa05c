import { ZOrganization, ZUpdateOrganizationInput } from "@fleet/shared";
import { auditOrigin } from "../../trpc/audit-origin.ts";
import { authedProcedure } from "../../trpc/init.ts";

export const updateOrganization = authedProcedure("organizations:write")
  .meta({
    openapi: {
      method: "PATCH",
      path: "/v1/organizations/{id}",
      tags: ["organizations"],
      summary: "Rename an organization of the token's subtree",
    },
    successStatus: 200,
  })
  .input(ZUpdateOrganizationInput)
  .output(ZOrganization)
  .mutation(({ ctx, input }) => ctx.services.organizationTree.update(ctx.auth, auditOrigin(ctx), input));
