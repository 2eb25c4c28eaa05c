import { successEnvelope, ZMovedRouter, ZMoveRouterBody, ZMoveRouterInput } from "@fleet/shared";
import { jsend } from "../../trpc/envelopes.ts";
import { authedProcedure } from "../../trpc/init.ts";

export const moveRouter = authedProcedure("routers:write")
  .meta({
    openapi: {
      method: "PATCH",
      path: "/api/routers/{router_id}",
      tags: ["routers"],
      summary: "Move the router to another team of its organization",
      description: "With a credential that is not bound to a team (else 403). A team of another organization: 422.",
    },
    successStatus: 200,
    rest: { body: ZMoveRouterBody },
  })
  .input(ZMoveRouterInput)
  .output(successEnvelope(ZMovedRouter))
  .mutation(jsend(({ ctx, input }) => ctx.services.teamAdmin.moveRouter(ctx.auth, input)));
