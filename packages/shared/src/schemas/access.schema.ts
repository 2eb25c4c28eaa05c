import { z } from "zod";
import { successEnvelope } from "./common.schema.ts";
import { normalizeAllowFrom } from "../rules/ipv4-rules.ts";
import { textRule } from "../rules/text-rules.ts";

/** docs/api.md "Temporary router access": limits tests probe at the edges. */
export const ACCESS_LIMITS = {
  expireAfterMinutes: { min: 15, max: 1440 },
} as const;

/** The router's own port of each service: WinBox, SSH, WebFig. */
export const ACCESS_SERVICE_PORTS = { winbox: 8291, ssh: 22, webfig: 80 } as const;
export type TAccessService = keyof typeof ACCESS_SERVICE_PORTS;
export const ACCESS_SERVICES = ["winbox", "ssh", "webfig"] as const;
export const ACCESS_LEVELS = ["read", "full"] as const;
export type TAccessLevelName = (typeof ACCESS_LEVELS)[number];

const pathId = textRule(
  z.string({ error: "must be a string" }).min(1, { error: "is required" }).max(100, { error: "is not a valid id" }),
);

const minutes = z
  .number({
    error: (issue) => (issue.input === undefined ? "is required" : "must be an integer between 15 and 1440"),
  })
  .int({ error: "must be an integer between 15 and 1440" })
  .min(ACCESS_LIMITS.expireAfterMinutes.min, { error: "must be an integer between 15 and 1440" })
  .max(ACCESS_LIMITS.expireAfterMinutes.max, { error: "must be an integer between 15 and 1440" })
  // A pipe keeps trpc-to-openapi from coercing strings into numbers (see forward.schema.ts).
  .transform((value) => value);

/** POST /api/routers/{router_id}/access. */
export const ZCreateAccessInput = z.object({
  router_id: pathId,
  service: z.enum(ACCESS_SERVICES, {
    error: (issue) => (issue.input === undefined ? "is required" : "must be winbox, ssh or webfig"),
  }),
  level: z.enum(ACCESS_LEVELS, {
    error: (issue) => (issue.input === undefined ? "is required" : "must be read or full"),
  }),
  expire_after_minutes: minutes,
  allow_from: textRule(
    z
      .string({ error: (issue) => (issue.input === undefined ? "is required" : "must be a string") })
      .max(64, { error: "must be an IPv4 address" }),
  )
    .meta({ description: "A public IPv4 address or CIDR (/24../32) allowed to connect, as for forwards." })
    .transform((value, ctx) => {
      const result = normalizeAllowFrom(value);
      if (result.ok) return result.value;
      ctx.addIssue({ code: "custom", message: result.message });
      return z.NEVER;
    }),
});
export type TCreateAccessInput = z.infer<typeof ZCreateAccessInput>;

export const ZAccessPath = z.object({ router_id: pathId, id: pathId });
export type TAccessPath = z.infer<typeof ZAccessPath>;

export const ZAccess = z
  .object({
    id: z.string(),
    service: z.enum(ACCESS_SERVICES),
    level: z.enum(ACCESS_LEVELS),
    username: z.string().meta({ description: "fleet-tmp-<short id>, the router's temporary user." }),
    entry_point: z.string(),
    port: z.number().int(),
    allow_only_cidr: z.string(),
    expires_at: z.string().meta({ description: "UTC ISO 8601 with +00:00." }),
    expired: z.boolean(),
    revoked_early: z.boolean(),
    created_at: z.string(),
  })
  .meta({ id: "RouterAccess" });
export type TAccess = z.infer<typeof ZAccess>;

export const ZCreatedAccess = successEnvelope(
  ZAccess.extend({
    password: z.string().meta({ description: "The temporary user's password: shown only here, stored nowhere." }),
  }),
).meta({ id: "CreatedRouterAccess" });
export type TCreatedAccess = z.infer<typeof ZCreatedAccess>;

export const ZAccessList = successEnvelope(z.array(ZAccess)).meta({ id: "RouterAccessList" });
export const ZAccessOne = successEnvelope(ZAccess).meta({ id: "RouterAccessOne" });

/** The temporary router user of an access id: `fleet-tmp-<first 8 hex digits>` (docs/routeros.md "Temporary access"). */
export const accessUsername = (accessId: string): string => {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(accessId)) {
    throw new Error(`access id must be a UUID, got ${JSON.stringify(accessId)}`);
  }
  return `fleet-tmp-${accessId.toLowerCase().slice(0, 8)}`;
};

/** Payload of access jobs: ids only; handlers read the current state when they run. */
export const ZAccessJobPayload = z.object({ access_id: z.uuid(), router_id: z.uuid() });
