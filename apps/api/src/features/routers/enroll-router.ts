import { auditOrigin } from "../../trpc/audit-origin.ts";
import { successEnvelope, ZEnrolledRouter, ZEnrollRouterInput } from "@fleet/shared";
import { teamProcedure } from "../../trpc/init.ts";
import { jsend } from "../../trpc/envelopes.ts";

export const enrollRouter = teamProcedure("routers:write")
  .meta({
    openapi: {
      method: "POST",
      path: "/api/routers",
      tags: ["routers"],
      summary: "Enroll (adopt) a router into the token's team",
      description:
        "Creating a service: the billing root must have a billing account (402 otherwise). Answers the router, its heartbeat token (shown this once) and its adoption command.",
      successDescription: "Created",
    },
    successStatus: 201,
    rest: { errors: [402, 404, 409, 502] },
    // The heartbeat token and the adoption command are credentials (docs/api.md "Authentication").
    noStore: true,
  })
  .input(ZEnrollRouterInput)
  .output(successEnvelope(ZEnrolledRouter))
  .mutation(jsend(({ ctx, input }) => ctx.services.routers.enroll(ctx.auth, ctx.teamId, input, auditOrigin(ctx))));
