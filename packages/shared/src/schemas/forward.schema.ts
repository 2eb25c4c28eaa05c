import { z } from "zod";
import { checkDstAddress, normalizeAllowFrom } from "../rules/ipv4-rules.ts";
import { textRule } from "../rules/text-rules.ts";

/** docs/api.md "Limits" for creating a forward. Exported so tests probe the exact edges. */
export const FORWARD_LIMITS = {
  expireAfterMinutes: { min: 10, max: 1440 },
  dstPort: { min: 1, max: 65535 },
  /** Active forwards one router may have at once (a guard against abuse; docs/api.md leaves it open). */
  activePerRouter: 20,
} as const;

const integerBetween = (min: number, max: number) =>
  z
    .number({
      error: (issue) => (issue.input === undefined ? "is required" : `must be an integer between ${min} and ${max}`),
    })
    .int({ error: `must be an integer between ${min} and ${max}` })
    .min(min, { error: `must be an integer between ${min} and ${max}` })
    .max(max, { error: `must be an integer between ${min} and ${max}` })
    // trpc-to-openapi switches bare number schemas to coercion (so `"60"`, `true`, `[22]` would pass
    // as numbers); a pipe is left alone, and JSON numbers stay the only accepted spelling.
    .transform((value) => value);

const addressText = textRule(
  z
    .string({ error: (issue) => (issue.input === undefined ? "is required" : "must be a string") })
    // Anything longer than "255.255.255.255/32" is wrong anyway; keeps error text short.
    .max(64, { error: "must be an IPv4 address" }),
);

// Path parameters: any text; an id that is not a UUID simply matches nothing (404 like an unknown id).
const pathId = textRule(
  z.string({ error: "must be a string" }).min(1, { error: "is required" }).max(100, { error: "is not a valid id" }),
);

export const ZRouterPath = z.object({ router_id: pathId });

export const ZForwardPath = z.object({ router_id: pathId, id: pathId });
export type TForwardPath = z.infer<typeof ZForwardPath>;

/** POST /api/routers/{router_id}/transient-forwarding (docs/api.md "Create body", docs/api.md "Tunnel agent and entry point"). */
export const ZCreateForwardInput = z.object({
  router_id: pathId,
  expire_after_minutes: integerBetween(FORWARD_LIMITS.expireAfterMinutes.min, FORWARD_LIMITS.expireAfterMinutes.max),
  dst_port: integerBetween(FORWARD_LIMITS.dstPort.min, FORWARD_LIMITS.dstPort.max),
  dst_address: addressText
    .meta({ format: "ipv4", description: "A private (RFC 1918) IPv4 address of a device on the router's LAN." })
    .transform((value, ctx) => {
      const result = checkDstAddress(value);
      if (result.ok) return result.value;
      ctx.addIssue({ code: "custom", message: result.message });
      return z.NEVER;
    }),
  allow_from: addressText
    .meta({
      pattern: "^\\d{1,3}(\\.\\d{1,3}){3}(/\\d{1,2})?$",
      description:
        "A public IPv4 address or CIDR range allowed to connect (in development also a loopback one, inside 127.0.0.0/8).",
    })
    .transform((value, ctx) => {
      // Loopback passes here; the API refuses it outside development (ForwardsService).
      const result = normalizeAllowFrom(value, { loopback: true });
      if (result.ok) return result.value;
      ctx.addIssue({ code: "custom", message: result.message });
      return z.NEVER;
    }),
});
export type TCreateForwardInput = z.infer<typeof ZCreateForwardInput>;

/** A forward's real state (docs/api.md "Transient Port Forward" `state`). */
export const FORWARD_STATES = ["pending", "active", "failed", "closed"] as const;
export type TForwardState = (typeof FORWARD_STATES)[number];

/** docs/api.md "Transient Port Forward", in the API doc's field order. */
export const ZForward = z
  .object({
    id: z.string(),
    port: z.number().int(),
    revoked_early: z.boolean(),
    allow_only_cidr: z.string(),
    authorized_at: z.string().nullable().meta({ description: "Currently unused; always null." }),
    expires_at: z.string().meta({ description: "UTC ISO 8601 with +00:00, e.g. 2026-11-21T13:00:00+00:00." }),
    expired: z.boolean(),
    entry_point: z.string(),
    dst_address: z.string(),
    dst_port: z.number().int(),
    time_to_expire: z
      .string()
      .meta({ description: 'Remaining time in words ("59 minutes from now"), "expired" or "revoked".' }),
    state: z.enum(FORWARD_STATES).meta({
      description:
        "pending until the router has the rule, active once the agent applied it, failed when the agent gave up (see failure_reason), closed after expiry or revoke.",
    }),
    failure_reason: z
      .string()
      .nullable()
      .meta({ description: "Why the tunnel agent gave up (state failed); null otherwise." }),
  })
  .meta({ id: "TransientPortForward" });
export type TForward = z.infer<typeof ZForward>;

/** Payload of apply/remove jobs: ids only; handlers read the current state when they run. */
export const ZForwardJobPayload = z.object({ forward_id: z.uuid(), router_id: z.uuid() });
export type TForwardJobPayload = z.infer<typeof ZForwardJobPayload>;

/** Payload of reconcile jobs. */
export const ZReconcileJobPayload = z.object({ router_id: z.uuid() });
export type TReconcileJobPayload = z.infer<typeof ZReconcileJobPayload>;
