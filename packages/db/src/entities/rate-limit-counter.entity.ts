import { defineEntity, type InferEntity, p } from "@mikro-orm/core";

/**
 * Requests counted per credential or source address and one-minute window, shared by every API
 * process (docs/api.md "Rate limits"): each process adds its local counts in batches.
 */
export const RateLimitCounter = defineEntity({
  name: "RateLimitCounter",
  tableName: "rate_limit_counters",
  properties: {
    /** `sub:<subject>`, `key:<api key id>` or `ip:<address>`. */
    bucket: p.string().length(300).primary(),
    windowStart: p.datetime().primary().index(),
    hits: p.integer(),
  },
});
export type TRateLimitCounter = InferEntity<typeof RateLimitCounter>;
