import { successEnvelope, ZCreateChangeInput, ZCreatedChange } from "@fleet/shared";
import { auditOrigin } from "../../trpc/audit-origin.ts";
import { authedProcedure } from "../../trpc/init.ts";
import { jsend } from "../../trpc/envelopes.ts";

export const createChange = authedProcedure("routers:write")
  .meta({
    openapi: {
      method: "POST",
      path: "/api/changes",
      tags: ["changes"],
      summary: "Create a fleet change",
      description:
        "A RouterOS script (up to 64 KiB, placeholders `{{identity}}`, `{{name}}`, `{{tunnel_ip}}`, `{{metadata.<key>}}` quoted per router) or a firmware upgrade, rolled out canaries first, then in waves.",
    },
    // Another organization's team or router named in `routers`.
    rest: { errors: [404] },
    successStatus: 201,
  })
  .input(ZCreateChangeInput)
  .output(successEnvelope(ZCreatedChange))
  .mutation(
    jsend(async ({ ctx, input }) =>
      ctx.services.changes.create(
        ctx.auth.organizationId,
        auditOrigin(ctx),
        input,
        await ctx.services.teams.bound(ctx.auth),
      ),
    ),
  );
