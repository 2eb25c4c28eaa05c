import { ZInvitationPathInput, ZNoContent } from "@fleet/shared";
import { auditOrigin } from "../../trpc/audit-origin.ts";
import { authedProcedure } from "../../trpc/init.ts";

export const revokeInvitation = authedProcedure("organizations:write")
  .meta({
    openapi: {
      method: "DELETE",
      path: "/v1/organizations/{id}/invitations/{invitation_id}",
      tags: ["invitations"],
      summary: "Revoke a pending invitation",
    },
    successStatus: 204,
  })
  .input(ZInvitationPathInput)
  .output(ZNoContent)
  .mutation(async ({ ctx, input }) => {
    await ctx.services.invitations.revoke(ctx.auth, auditOrigin(ctx), input.id, input.invitation_id);
  });
