import { ZAcceptedInvitation, ZAcceptInvitationInput } from "@fleet/shared";
import { auditOrigin } from "../../trpc/audit-origin.ts";
import { authedProcedure } from "../../trpc/init.ts";

export const acceptInvitation = authedProcedure(null)
  .meta({
    openapi: {
      method: "POST",
      path: "/v1/invitations/{token}/accept",
      tags: ["invitations"],
      summary: "Accept an invitation as the invited person",
      description:
        "With a token of the user whose email is the invitation's (else 403). Used, revoked or expired: 410. The organization becomes the user's current one.",
    },
    successStatus: 200,
    rest: { errors: [410] },
  })
  .input(ZAcceptInvitationInput)
  .output(ZAcceptedInvitation)
  .mutation(({ ctx, input }) => ctx.services.invitations.accept(ctx.auth, auditOrigin(ctx), input.token));
