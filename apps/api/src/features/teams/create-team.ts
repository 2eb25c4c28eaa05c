import { ZCreateTeamInput, ZTeam } from "@fleet/shared";
import { authedProcedure } from "../../trpc/init.ts";

export const createTeam = authedProcedure("organizations:write")
  .meta({
    openapi: {
      method: "POST",
      path: "/v1/organizations/{id}/teams",
      tags: ["teams"],
      summary: "Create a team (at most 100 per organization)",
      successDescription: "Created",
    },
    successStatus: 201,
  })
  .input(ZCreateTeamInput)
  .output(ZTeam)
  .mutation(({ ctx, input }) => ctx.services.teamAdmin.create(ctx.auth, input));
