import { ZNoContent, ZOrganizationIdInput } from "@fleet/shared";
import { auditOrigin } from "../../trpc/audit-origin.ts";
import { authedProcedure } from "../../trpc/init.ts";

export const deleteOrganization = authedProcedure("organizations:write")
  .meta({
    openapi: {
      method: "DELETE",
      path: "/v1/organizations/{id}",
      tags: ["organizations"],
      summary: "Delete an empty organization below the token's organization",
      description:
        "Only with no routers, child organizations, active forwards or access and no billing account of its own; else 409 naming what is left. The top of a tree is never deleted here.",
    },
    successStatus: 204,
    rest: { errors: [409] },
  })
  .input(ZOrganizationIdInput)
  .output(ZNoContent)
  .mutation(async ({ ctx, input }) => {
    await ctx.services.organizationTree.delete(ctx.auth, auditOrigin(ctx), input.id);
  });
