import { type Clock, systemClock } from "@fleet/shared";

/**
 * The daemon's time source: heartbeat timestamps, fault thresholds and downtime all read it, so
 * tests drive them with a ManualClock instead of sleeping. Cache TTLs and ping periods are
 * transport housekeeping and use the process's monotonic time instead.
 */
export type { Clock };
export { systemClock };
