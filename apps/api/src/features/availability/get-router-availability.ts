import { ZRouterAvailability, ZRouterAvailabilityQuery } from "@fleet/shared";
import { teamProcedure } from "../../trpc/init.ts";
import { jsend } from "../../trpc/envelopes.ts";

export const getRouterAvailability = teamProcedure("routers:read")
  .meta({
    openapi: {
      method: "GET",
      path: "/api/routers/{router_id}/availability",
      tags: ["availability"],
      summary: "A router's availability per UTC day or month",
      description:
        "`from` and `to` are UTC dates (YYYY-MM-DD, `to` included) or ISO 8601 date-times; at most 400 days apart " +
        "(default: the last 30 days). `granularity` is `day` (default) or `month`. Time before enrollment counts as up.",
    },
    successStatus: 200,
  })
  .input(ZRouterAvailabilityQuery)
  .output(ZRouterAvailability)
  .query(jsend(({ ctx, input }) => ctx.services.availability.router(ctx.teamId, input)));
