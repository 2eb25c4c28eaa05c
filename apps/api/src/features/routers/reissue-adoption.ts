import { successEnvelope, ZAdoption, ZRouterIdInput } from "@fleet/shared";
import { teamProcedure } from "../../trpc/init.ts";
import { jsend } from "../../trpc/envelopes.ts";

/** docs/routeros.md "Adoption": a new script URL for a router that was reset. */
export const reissueAdoption = teamProcedure("routers:write")
  .meta({
    openapi: {
      method: "POST",
      path: "/api/routers/{router_id}/adoption",
      tags: ["routers"],
      summary: "Adopt a reset router again",
      description:
        "Mints a new heartbeat token (the old one stops working) and a new one-time adoption script URL, valid for one hour or until the first heartbeat made with the new token.",
      successDescription: "Created",
    },
    successStatus: 201,
    // The command and URL are credentials (docs/api.md "Authentication").
    noStore: true,
  })
  .input(ZRouterIdInput)
  .output(successEnvelope(ZAdoption))
  .mutation(jsend(({ ctx, input }) => ctx.services.adoption.reissue(ctx.teamId, input.router_id)));
