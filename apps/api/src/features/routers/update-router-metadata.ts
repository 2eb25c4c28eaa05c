import { successEnvelope, ZRouterMetadata, ZRouterMetadataPatchBody, ZUpdateRouterMetadataInput } from "@fleet/shared";
import { teamProcedure } from "../../trpc/init.ts";
import { jsend } from "../../trpc/envelopes.ts";

export const updateRouterMetadata = teamProcedure("routers:write")
  .meta({
    openapi: {
      method: "PATCH",
      path: "/api/routers/{router_id}/metadata",
      tags: ["routers"],
      summary: "Merge user keys into the router's metadata",
      description:
        "Known keys are validated (name, timezone, lat, lng, banner_img, thumbnail_img); keys the router reports are read-only; other keys are free-form but bounded. null removes a key.",
    },
    successStatus: 200,
    rest: { body: ZRouterMetadataPatchBody },
  })
  .input(ZUpdateRouterMetadataInput)
  .output(successEnvelope(ZRouterMetadata))
  .mutation(jsend(({ ctx, input }) => ctx.services.routers.updateMetadata(ctx.teamId, input)));
