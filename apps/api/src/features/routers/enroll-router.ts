import { auditOrigin } from "../../trpc/audit-origin.ts";
import { successEnvelope, ZEnrolledRouter, ZEnrollRouterInput } from "@fleet/shared";
import { teamProcedure } from "../../trpc/init.ts";

export const enrollRouter = teamProcedure("routers:write")
  .meta({
    openapi: {
      method: "POST",
      path: "/api/routers",
      tags: ["routers"],
      summary: "Enroll (adopt) a router into the token's team",
      description:
        "Creating a service: the billing root must have a billing account (402 otherwise). Answers the router and its heartbeat token, shown this once.",
      successDescription: "Created",
    },
    successStatus: 201,
  })
  .input(ZEnrollRouterInput)
  .output(successEnvelope(ZEnrolledRouter))
  .mutation(async ({ ctx, input }) => ({
    status: "success" as const,
    data: await ctx.services.routers.enroll(ctx.auth, ctx.teamId, input, auditOrigin(ctx)),
  }));
