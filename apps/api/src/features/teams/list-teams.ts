import { ZOrganizationIdInput, ZTeamList } from "@fleet/shared";
import { authedProcedure } from "../../trpc/init.ts";

export const listTeams = authedProcedure(null)
  .meta({
    openapi: {
      method: "GET",
      path: "/v1/organizations/{id}/teams",
      tags: ["teams"],
      summary: "The organization's teams, the default one first",
    },
    successStatus: 200,
  })
  .input(ZOrganizationIdInput)
  .output(ZTeamList)
  .query(({ ctx, input }) => ctx.services.teamAdmin.list(ctx.auth, input.id));
