import { ZMemberPathInput, ZNoContent } from "@fleet/shared";
import { auditOrigin } from "../../trpc/audit-origin.ts";
import { authedProcedure } from "../../trpc/init.ts";

export const removeMember = authedProcedure("organizations:write")
  .meta({
    openapi: {
      method: "DELETE",
      path: "/v1/organizations/{id}/members/{user_id}",
      tags: ["members"],
      summary: "Remove a member",
      description: "Their tokens stop working in the organization within 10 s, and their streams end.",
    },
    successStatus: 204,
    rest: { errors: [409] },
  })
  .input(ZMemberPathInput)
  .output(ZNoContent)
  .mutation(async ({ ctx, input }) => {
    await ctx.services.memberships.remove(ctx.auth, auditOrigin(ctx), input.id, input.user_id);
  });
