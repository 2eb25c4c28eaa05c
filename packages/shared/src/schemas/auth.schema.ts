import { z } from "zod";
import { stringError, textRule } from "../rules/text-rules.ts";

/**
 * Every scope the system knows (docs/api.md "Authentication"); `organizations:write` changes the
 * organization tree, members and invitations (docs/api.md "Roles and scopes").
 */
export const ALL_SCOPES = [
  "account:read",
  "account:write",
  "routers:read",
  "routers:write",
  "organizations:write",
] as const;
export type TScope = (typeof ALL_SCOPES)[number];

// Every field names its problem in the words of docs/api.md "Errors", never the validator's own text.
const bounded = (max: number) =>
  textRule(z.string({ error: stringError }).max(max, { error: `must be at most ${max} characters` }));
/**
 * Scopes of the deployment's operators, never of a tenant (docs/api.md "Authentication"):
 * `tunnel:assign` sets a router's `tunnel_ip` at enrollment. dev-login never grants them, and an
 * API key carries them only when the admin CLI made it.
 */
export const PLATFORM_SCOPES = ["tunnel:assign"] as const;
export type TPlatformScope = (typeof PLATFORM_SCOPES)[number];

export const ZDevLoginInput = z.object({
  email: bounded(250)
    .meta({ format: "email" })
    .pipe(z.email({ error: "must be a valid email address" })),
  scope: bounded(500).optional(),
  timezone: bounded(64).optional(),
  organization_id: bounded(100).optional().meta({
    description:
      "Sign in to this organization (one the user acts in, else 404); it becomes their current one. Default: the current one.",
  }),
});
export type TDevLoginInput = z.infer<typeof ZDevLoginInput>;

export const ZLoginResult = z
  .object({
    access_token: z.string(),
    token_type: z.literal("Bearer"),
    expires_in: z.number().int(),
    user_id: z.string(),
    organization_id: z.string(),
    team_id: z.string(),
  })
  .meta({ id: "LoginResult" });
export type TLoginResult = z.infer<typeof ZLoginResult>;

export const ZLoginHookInput = z.object({
  email: textRule(z.string().max(250))
    .meta({ format: "email" })
    .pipe(z.email({ error: "must be a valid email address" })),
});

export const ZLoginHookResult = z
  .object({ user_id: z.string(), organization_id: z.string(), team_id: z.string() })
  .meta({ id: "LoginHookResult" });
export type TLoginHookResult = z.infer<typeof ZLoginHookResult>;

/** `POST /v1/auth/token` (docs/api.md "Sign-in"): the organization to act in; default the current one. */
export const ZAuthTokenInput = z
  .object({ organization_id: bounded(255).optional() })
  .optional()
  .transform((input) => input ?? {});
export type TAuthTokenInput = z.infer<typeof ZAuthTokenInput>;

export const ZAuthTokenResult = z
  .object({
    access_token: z.string(),
    token_type: z.literal("Bearer"),
    expires_in: z.number().int(),
    organization_id: z.string(),
    role: z.string(),
  })
  .meta({ id: "AuthTokenResult" });

export const ZLogoutResult = z.object({ signed_out: z.literal(true) }).meta({ id: "LogoutResult" });

export const ZMe = z
  .object({
    user_id: z.string(),
    /** Null for a token whose subject is no user of this system (an outside provider's, an admin key). */
    email: z.string().nullable(),
    organization_id: z.string(),
    role: z.string().nullable(),
    organizations: z.array(z.object({ id: z.string(), name: z.string(), role: z.string() })),
  })
  .meta({ id: "Me" });
