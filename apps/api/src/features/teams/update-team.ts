import { ZTeam, ZUpdateTeamInput } from "@fleet/shared";
import { authedProcedure } from "../../trpc/init.ts";

export const updateTeam = authedProcedure("organizations:write")
  .meta({
    openapi: {
      method: "PATCH",
      path: "/v1/organizations/{id}/teams/{team_id}",
      tags: ["teams"],
      summary: "Rename a team",
    },
    successStatus: 200,
  })
  .input(ZUpdateTeamInput)
  .output(ZTeam)
  .mutation(({ ctx, input }) => ctx.services.teamAdmin.update(ctx.auth, input));
