import { z } from "zod";
import { successEnvelope } from "./common.schema.ts";
import { textRule } from "../rules/text-rules.ts";

const bound = textRule(z.string({ error: "must be a date (YYYY-MM-DD)" }).max(64, { error: "is not a date" }));

/** GET /api/routers/{router_id}/availability. `router_id` may also come as `id`, as on every router path. */
export const ZRouterAvailabilityQuery = z.object({
  router_id: textRule(z.string({ error: "must be a string" })),
  from: bound.optional(),
  to: bound.optional(),
  granularity: z.enum(["day", "month"], { error: "must be day or month" }).optional(),
});
export type TRouterAvailabilityQuery = z.infer<typeof ZRouterAvailabilityQuery>;

export const ZAvailabilityPeriod = z
  .object({
    period_start: z.string().meta({ description: "Start of the UTC day or month, ISO 8601 +00:00." }),
    minutes_down: z.number(),
    maintenance_minutes: z.number().meta({ description: "Minutes inside maintenance windows covering the router." }),
    availability_percent: z.number().meta({ description: "0..100, 2 decimals, maintenance time left out." }),
    availability_percent_including_maintenance: z.number(),
  })
  .meta({ id: "AvailabilityPeriod" });
export type TAvailabilityPeriod = z.infer<typeof ZAvailabilityPeriod>;

export const ZRouterAvailability = successEnvelope(z.array(ZAvailabilityPeriod)).meta({ id: "RouterAvailability" });
export type TRouterAvailability = z.infer<typeof ZRouterAvailability>;

/** GET /api/availability. `format=csv` (or `Accept: text/csv`) answers CSV. */
export const ZFleetAvailabilityQuery = z
  .object({
    from: bound.optional(),
    to: bound.optional(),
    format: z.enum(["json", "csv"], { error: "must be json or csv" }).optional(),
  })
  // Every field is optional: a typed client may call it with no input at all.
  .optional();
export type TFleetAvailabilityQuery = NonNullable<z.infer<typeof ZFleetAvailabilityQuery>>;

export const ZFleetAvailabilityRow = z
  .object({
    router_id: z.string(),
    name: z.string(),
    minutes_down: z.number(),
    maintenance_minutes: z.number(),
    availability_percent: z.number().meta({ description: "Maintenance time left out." }),
    availability_percent_including_maintenance: z.number(),
    faults: z.number().int().meta({ description: "Faults opened inside the range." }),
  })
  .meta({ id: "FleetAvailabilityRow" });
export type TFleetAvailabilityRow = z.infer<typeof ZFleetAvailabilityRow>;

export const ZFleetAvailability = successEnvelope(
  z.array(ZFleetAvailabilityRow).meta({ description: "Worst first." }),
).meta({ id: "FleetAvailability" });
export type TFleetAvailability = z.infer<typeof ZFleetAvailability>;

/** Columns of the fleet report's CSV, in order. */
export const FLEET_AVAILABILITY_CSV_COLUMNS = [
  "router_id",
  "name",
  "minutes_down",
  "maintenance_minutes",
  "availability_percent",
  "availability_percent_including_maintenance",
  "faults",
] as const;
