import { ZCreatedInvitation, ZCreateInvitationInput } from "@fleet/shared";
import { auditOrigin } from "../../trpc/audit-origin.ts";
import { authedProcedure } from "../../trpc/init.ts";

export const createInvitation = authedProcedure("organizations:write")
  .meta({
    openapi: {
      method: "POST",
      path: "/v1/organizations/{id}/invitations",
      tags: ["invitations"],
      summary: "Invite someone by email with a role (and optionally a team)",
      description:
        "Valid 7 days, once. The url is shown only in this answer (and mailed when SMTP_URL is set). At most 100 pending invitations per organization (then 429).",
      successDescription: "Created",
    },
    successStatus: 201,
    noStore: true,
  })
  .input(ZCreateInvitationInput)
  .output(ZCreatedInvitation)
  .mutation(({ ctx, input }) => ctx.services.invitations.create(ctx.auth, auditOrigin(ctx), input));
