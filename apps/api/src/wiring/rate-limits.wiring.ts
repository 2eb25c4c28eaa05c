import { RateLimitCountersRepository } from "@fleet/db";
import { RateLimiter } from "../trpc/rate-limit.ts";
import { SharedRateLimiter } from "../trpc/shared-rate-limit.ts";
import type { Wired, WiringContext } from "./wiring.ts";

export interface RateLimitServices {
  /**
   * docs/api.md "Rate limits": per credential (`api`) and per source address without a valid
   * credential (`unauthenticated`), both counted across API processes; dev-login per source address.
   */
  rateLimits: { api: SharedRateLimiter; unauthenticated: SharedRateLimiter; devLogin: RateLimiter };
}

export const wireRateLimits = (
  { config, db, logger, wallClock }: WiringContext,
  devLoginPerMinute: number,
): Wired<RateLimitServices> => {
  const store = new RateLimitCountersRepository(db);
  const onError = (error: unknown) => logger.warn({ err: error }, "rate limit counts not shared; counting locally");
  const rateLimits = {
    api: new SharedRateLimiter({
      limit: config.rateLimitPerMinute,
      subject: "credential",
      store,
      clock: wallClock,
      onError,
    }),
    unauthenticated: new SharedRateLimiter({
      limit: config.clients.unauthenticatedPerMinute,
      subject: "address without a valid credential",
      store,
      clock: wallClock,
      onError,
    }),
    devLogin: new RateLimiter({ limit: devLoginPerMinute, subject: "address on dev-login" }),
  };
  return {
    services: { rateLimits },
    schedules: [],
    close: async () => {
      await rateLimits.api.close();
      await rateLimits.unauthenticated.close();
      rateLimits.devLogin.close();
    },
  };
};
