import { ZCreateForwardInput, ZForward } from "@fleet/shared";
import { auditOrigin } from "../../trpc/audit-origin.ts";
import { teamProcedure } from "../../trpc/init.ts";

export const createForward = teamProcedure("routers:write")
  .meta({
    openapi: {
      method: "POST",
      path: "/api/routers/{router_id}/transient-forwarding",
      tags: ["transient forwarding"],
      summary: "Create a transient port forward",
      description:
        "Connect to entry_point:port from inside allow_from to reach dst_address:dst_port behind the router. " +
        "The router is configured asynchronously, within seconds. TCP only, management traffic only.",
      successDescription: "Created",
    },
    successStatus: 201,
    rest: { errors: [409, 503] },
  })
  .input(ZCreateForwardInput)
  .output(ZForward)
  .mutation(({ ctx, input }) => ctx.services.forwards.create(ctx.teamId, input, auditOrigin(ctx)));
