import { ZNoContent, ZTeamPathInput } from "@fleet/shared";
import { authedProcedure } from "../../trpc/init.ts";

export const deleteTeam = authedProcedure("organizations:write")
  .meta({
    openapi: {
      method: "DELETE",
      path: "/v1/organizations/{id}/teams/{team_id}",
      tags: ["teams"],
      summary: "Delete an empty team that is not the default one",
      description: "A team with routers, bound members or pending invitations, or the default team: 409.",
    },
    successStatus: 204,
    rest: { errors: [409] },
  })
  .input(ZTeamPathInput)
  .output(ZNoContent)
  .mutation(async ({ ctx, input }) => {
    await ctx.services.teamAdmin.delete(ctx.auth, input.id, input.team_id);
  });
