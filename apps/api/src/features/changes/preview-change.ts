import { successEnvelope, ZChangePreview, ZChangePreviewQuery } from "@fleet/shared";
import { authedProcedure } from "../../trpc/init.ts";
import { jsend } from "../../trpc/envelopes.ts";

export const previewChange = authedProcedure("routers:read")
  .meta({
    openapi: {
      method: "GET",
      path: "/api/changes/{id}/preview",
      tags: ["changes"],
      summary: "The script as one of the change's routers would run it",
    },
    successStatus: 200,
  })
  .input(ZChangePreviewQuery)
  .output(successEnvelope(ZChangePreview))
  .query(
    jsend(async ({ ctx, input }) =>
      ctx.services.changes.preview(
        ctx.auth.organizationId,
        input.id,
        input.router_id,
        await ctx.services.teams.bound(ctx.auth),
      ),
    ),
  );
