import { ZForward, ZForwardPath } from "@fleet/shared";
import { teamProcedure } from "../../trpc/init.ts";

export const getForward = teamProcedure("routers:read")
  .meta({
    openapi: {
      method: "GET",
      path: "/api/routers/{router_id}/transient-forwarding/{id}",
      tags: ["transient forwarding"],
      summary: "Get one transient port forward",
      description: "Any state: active, expired or revoked early. Bare answer (no envelope).",
    },
    successStatus: 200,
  })
  .input(ZForwardPath)
  .output(ZForward)
  .query(({ ctx, input }) => ctx.services.forwards.get(ctx.teamId, input.router_id, input.id));
