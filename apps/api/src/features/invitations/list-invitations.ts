import { ZInvitationList, ZOrganizationIdInput } from "@fleet/shared";
import { authedProcedure } from "../../trpc/init.ts";

export const listInvitations = authedProcedure("organizations:write")
  .meta({
    openapi: {
      method: "GET",
      path: "/v1/organizations/{id}/invitations",
      tags: ["invitations"],
      summary: "Pending invitations (never their links)",
    },
    successStatus: 200,
  })
  .input(ZOrganizationIdInput)
  .output(ZInvitationList)
  .query(({ ctx, input }) => ctx.services.invitations.list(ctx.auth, input.id));
