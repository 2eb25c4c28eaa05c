import { AppError, type TScope } from "@fleet/shared";
import { initTRPC, TRPCError } from "@trpc/server";
import type { OpenApiMeta } from "trpc-to-openapi";
import type { z } from "zod";
import type { AuthClaims } from "../features/auth/token-verifier.ts";
import { describeError } from "../http/error-shapes.ts";
import type { RequestContext } from "./context.ts";
import { trpcCodeForStatus } from "./error-codes.ts";
import { inSpan, SpanStatusCode } from "@fleet/db";

/** How often an idle SSE subscription gets a ping event. */
export const SSE_PING_INTERVAL_MS = 10_000;

/** Procedure meta: the REST face (trpc-to-openapi) plus the success status of that face. */
export type ProcedureMeta = OpenApiMeta & {
  successStatus?: 200 | 201 | 204;
  /**
   * The answer carries a secret (a token, a client secret, a key): every transport sends
   * `Cache-Control: no-store` (docs/api.md "Authentication").
   */
  noStore?: boolean;
  /** The REST face beyond `openapi` (docs/api.md "Errors"), read by the REST adapter and /openapi.json. */
  rest?: RestSurface;
};

type HttpMethod = "GET" | "POST" | "PATCH" | "PUT" | "DELETE";

export interface RestSurface {
  /** Other method/path pairs answered exactly like this operation (PUT for a PATCH, a second path). */
  aliases?: ReadonlyArray<{ method: HttpMethod; path?: string }>;
  /** Methods refused on this operation's path with 405 and this message (not merely unlisted). */
  refused?: ReadonlyArray<{ method: HttpMethod; message: string }>;
  /** Statuses beyond the ones every operation of its kind can answer (402, 409, 502, 503, ...). */
  errors?: readonly number[];
  /**
   * Who may call it: `token` (the default: a user's access token), `none` (dev-login), or
   * `login-hook` (the identity provider's shared secret, not a user's token).
   */
  auth?: "token" | "none" | "login-hook";
  /** The request body's schema for /openapi.json when the input schema cannot show it (a preprocess). */
  body?: z.ZodType;
}

const t = initTRPC
  .context<RequestContext>()
  .meta<ProcedureMeta>()
  .create({
    // Never ship stack traces to clients, whatever NODE_ENV says.
    isDev: false,
    // routers.onStatus is a long-lived SSE stream that may stay silent for hours: a ping comment
    // keeps proxies (nginx cuts idle upstreams after 60 s) from closing it, and clients reconnect
    // by themselves when even pings stop arriving (docs/api.md "tRPC").
    sse: {
      ping: { enabled: true, intervalMs: SSE_PING_INTERVAL_MS },
      client: { reconnectAfterInactivityMs: SSE_PING_INTERVAL_MS * 4 },
    },
    errorFormatter: ({ shape, error }) => {
      const described = describeError(error);
      return {
        ...shape,
        message: described.message,
        data: {
          code: shape.data.code,
          httpStatus: shape.data.httpStatus,
          path: shape.data.path,
          appCode: described.code,
          ...(described.fields ? { fields: described.fields } : {}),
          ...described.extra,
        },
      };
    },
  });

export const router = t.router;

/**
 * Every procedure starts here: domain code throws AppError, and this turns it into the tRPC code
 * of the same HTTP status so both transports agree.
 */
export const publicProcedure = t.procedure.use(async ({ next, path }) => {
  // docs/operations.md "Tracing": a span per procedure, inside the request's span.
  const result = await inSpan(`trpc ${path}`, { "rpc.system": "trpc", "rpc.method": path }, async (span) => {
    const outcome = await next();
    if (!outcome.ok) span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.error.message });
    return outcome;
  });
  if (!result.ok && result.error.cause instanceof AppError) {
    const cause = result.error.cause;
    throw new TRPCError({ code: trpcCodeForStatus(cause.status), message: cause.message, cause });
  }
  return result;
});

/** A procedure that needs a verified access token carrying `scope`. */
export const authedProcedure = (scope: TScope) =>
  publicProcedure.use(async ({ ctx, next }) => {
    const claims: AuthClaims = await ctx.services.tokens.verify(ctx.authorization);
    // Counted per verified credential, so a forged token can never spend someone else's quota.
    await ctx.services.rateLimits.api.hit(ctx.req, ctx.res, claims.credentialId ?? `sub:${claims.userId}`);
    if (!claims.scopes.has(scope)) {
      throw new AppError("forbidden", `This access token lacks the '${scope}' scope.`);
    }
    const organizationId = await ctx.services.organizations.resolve(claims.organizationId);
    const auth = organizationId === claims.organizationId ? claims : { ...claims, organizationId };
    return next({ ctx: { ...ctx, auth } });
  });

/**
 * A router-endpoint procedure: verified token with `scope`, and `ctx.teamId` resolved from the
 * token's team claim or the organization's default team (docs/api.md "Authentication").
 */
export const teamProcedure = (scope: TScope) =>
  authedProcedure(scope).use(async ({ ctx, next }) => {
    const teamId = await ctx.services.teams.resolve(ctx.auth);
    return next({ ctx: { ...ctx, teamId } });
  });
