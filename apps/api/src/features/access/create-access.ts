import { ZCreateAccessInput, ZCreatedAccess } from "@fleet/shared";
import { auditOrigin } from "../../trpc/audit-origin.ts";
import { teamProcedure } from "../../trpc/init.ts";
import { jsend } from "../../trpc/envelopes.ts";

export const createAccess = teamProcedure("routers:write")
  .meta({
    openapi: {
      method: "POST",
      path: "/api/routers/{router_id}/access",
      tags: ["router access"],
      summary: "Open WinBox, SSH or WebFig on the router itself for a limited time",
      description:
        "Creates a temporary router user (read or full) reachable through entry_point:port from allow_from; " +
        "the password is shown only in this answer. The router is configured asynchronously, within seconds.",
      successDescription: "Created",
    },
    successStatus: 201,
    noStore: true,
    rest: { errors: [409, 503] },
  })
  .input(ZCreateAccessInput)
  .output(ZCreatedAccess)
  .mutation(jsend(({ ctx, input }) => ctx.services.access.create(ctx.teamId, input, auditOrigin(ctx))));
