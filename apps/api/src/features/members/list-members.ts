import { ZMemberList, ZOrganizationIdInput } from "@fleet/shared";
import { authedProcedure } from "../../trpc/init.ts";

export const listMembers = authedProcedure(null)
  .meta({
    openapi: {
      method: "GET",
      path: "/v1/organizations/{id}/members",
      tags: ["members"],
      summary: "Who acts in the organization, with their effective role and where it is held",
    },
    successStatus: 200,
  })
  .input(ZOrganizationIdInput)
  .output(ZMemberList)
  .query(({ ctx, input }) => ctx.services.memberships.list(ctx.auth, input.id));
