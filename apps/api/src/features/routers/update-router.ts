import { successEnvelope, ZRouter, ZUpdateRouterBody, ZUpdateRouterInput } from "@fleet/shared";
import { jsend } from "../../trpc/envelopes.ts";
import { teamProcedure } from "../../trpc/init.ts";

export const updateRouter = teamProcedure("routers:write")
  .meta({
    openapi: {
      method: "PATCH",
      path: "/api/routers/{router_id}",
      tags: ["routers"],
      summary: "Change the router's own fields",
      description:
        "`tags` replaces the router's tags: at most 20, each 1-40 characters; duplicates collapse. " +
        "`team_id` moves the router to another team of its organization: only with a credential that is not bound to a team (else 403); a team of another organization: 422.",
    },
    successStatus: 200,
    rest: { body: ZUpdateRouterBody },
  })
  .input(ZUpdateRouterInput)
  .output(successEnvelope(ZRouter))
  .mutation(
    jsend(async ({ ctx, input }) => {
      // A move first: the tags are then set on the router in its new team.
      const teamId =
        input.team_id === undefined
          ? ctx.teamId
          : (await ctx.services.teamAdmin.moveRouter(ctx.auth, { router_id: input.router_id, team_id: input.team_id }))
              .team_id;
      return ctx.services.routers.update(teamId, input);
    }),
  );
