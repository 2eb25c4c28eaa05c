import type { AuditOrigin } from "@fleet/db";
import type { AuthClaims } from "../features/auth/token-verifier.ts";

/**
 * Who made a request and from where, as the audit log records it (docs/api.md "Audit log and
 * webhooks"): the token's user or the API key, and the client address (IPv4-mapped IPv6 unwrapped).
 */
export const auditOrigin = (ctx: { auth: AuthClaims; ip: string | undefined }): AuditOrigin => ({
  actor:
    ctx.auth.credential.type === "api_key"
      ? { type: "api_key", id: ctx.auth.credential.id }
      : { type: "user", id: ctx.auth.userId },
  sourceIp: ctx.ip ? ctx.ip.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, "") : null,
});
