import { FLEET_AVAILABILITY_CSV_COLUMNS, ZFleetAvailability, ZFleetAvailabilityQuery } from "@fleet/shared";
import { teamProcedure } from "../../trpc/init.ts";
import { jsend } from "../../trpc/envelopes.ts";

export const getFleetAvailability = teamProcedure("routers:read")
  .meta({
    openapi: {
      method: "GET",
      path: "/api/availability",
      tags: ["availability"],
      summary: "The team's availability report, worst first",
      description:
        "One row per router of the team over `from`..`to` (as for a router's availability). " +
        "With `Accept: text/csv` or `?format=csv` the same rows come as CSV with a header line.",
    },
    successStatus: 200,
    rest: { csv: { columns: FLEET_AVAILABILITY_CSV_COLUMNS } },
  })
  .input(ZFleetAvailabilityQuery)
  .output(ZFleetAvailability)
  .query(jsend(({ ctx, input }) => ctx.services.availability.fleet(ctx.teamId, input ?? {})));
