import { router } from "../../trpc/init.ts";
import { getFleetAvailability } from "./get-fleet-availability.ts";
import { getRouterAvailability } from "./get-router-availability.ts";

export const availabilityRouter = router({ router: getRouterAvailability, fleet: getFleetAvailability });
