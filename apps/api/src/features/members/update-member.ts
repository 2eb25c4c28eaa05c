import { ZMember, ZUpdateMemberInput } from "@fleet/shared";
import { auditOrigin } from "../../trpc/audit-origin.ts";
import { authedProcedure } from "../../trpc/init.ts";

export const updateMember = authedProcedure("organizations:write")
  .meta({
    openapi: {
      method: "PATCH",
      path: "/v1/organizations/{id}/members/{user_id}",
      tags: ["members"],
      summary: "Change a member's role or team",
      description:
        "Nobody grants a role above their own (422 naming role); only an owner changes an owner; the last owner of a top organization stays (409). The member's tokens lose what they lost within 10 s.",
    },
    successStatus: 200,
    rest: { errors: [409] },
  })
  .input(ZUpdateMemberInput)
  .output(ZMember)
  .mutation(({ ctx, input }) => ctx.services.memberships.update(ctx.auth, auditOrigin(ctx), input));
