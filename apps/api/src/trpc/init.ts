import { AppError, type TScope } from "@fleet/shared";
import { initTRPC } from "@trpc/server";
import type { OpenApiMeta } from "trpc-to-openapi";
import type { z } from "zod";
import type { AuthClaims } from "../features/auth/token-verifier.ts";
import type { RequestContext } from "./context.ts";
import { formatTrpcError, toTrpcError, validationError } from "./errors.ts";
import { addressKey } from "./rate-limit.ts";
import { inSpan, SpanStatusCode } from "@fleet/db";

/** How often an idle SSE subscription gets a ping event. */
export const SSE_PING_INTERVAL_MS = 10_000;

/** Procedure meta: the REST face (trpc-to-openapi) plus the success status of that face. */
export type ProcedureMeta = OpenApiMeta & {
  successStatus?: 200 | 201 | 202 | 204;
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
  /**
   * The REST answer is text, not JSON: the procedure's string output sent as this media type;
   * tRPC still answers the string as JSON.
   */
  text?: "text/plain";
  /**
   * The REST answer may also be CSV (docs/api.md "Availability"): with `Accept: text/csv` or
   * `?format=csv`, the rows of the JSend `data` as CSV with these columns, a header line first.
   */
  csv?: { columns: readonly string[] };
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
    // docs/api.md "Errors": one formatter for every tRPC answer (trpc/errors.ts).
    errorFormatter: ({ shape, error }) => formatTrpcError(shape, error),
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
  if (result.ok) return result;
  // The input parser refuses with tRPC's BAD_REQUEST (400); the contract wants the 422 of REST
  // (docs/api.md "Errors"), so a schema refusal becomes the same validation error REST renders.
  const cause = result.error.cause instanceof AppError ? result.error.cause : validationError(result.error);
  if (cause) throw toTrpcError(cause);
  return result;
});

/**
 * A subscription's events: an AppError thrown while the stream runs (after the middleware above
 * has returned) becomes the tRPC code of its status too, e.g. UNAUTHORIZED when the credential
 * stops being valid (docs/api.md "Authentication").
 */
export async function* trpcStream<T>(events: AsyncIterable<T>): AsyncGenerator<T> {
  try {
    yield* events;
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    throw toTrpcError(error);
  }
}

/** A procedure that needs a verified access token carrying `scope`. */
export const authedProcedure = (scope: TScope) =>
  publicProcedure.use(async ({ ctx, next }) => {
    const limits = ctx.services.rateLimits;
    // Requests without a valid credential are counted per source address (docs/api.md "Rate
    // limits"); an address over its limit gets 429 and no database lookup of unknown API keys.
    // The address key only when it is needed (IPv6 clients share their /56, which costs a parse).
    const address = () => `ip:${addressKey(ctx.ip)}`;
    let claims: AuthClaims;
    try {
      claims = await ctx.services.tokens.verify(ctx.authorization, {
        refuseLookup: () => {
          const key = address();
          return limits.unauthenticated.isOver(key) ? limits.unauthenticated.refusal(key) : undefined;
        },
      });
    } catch (error) {
      if (error instanceof AppError && error.code === "unauthenticated") await limits.unauthenticated.hit(address());
      throw error;
    }
    // Counted per verified credential, so a forged token can never spend someone else's quota.
    await limits.api.hit(claims.credentialId ?? `sub:${claims.userId}`);
    if (!claims.scopes.has(scope)) {
      throw new AppError("forbidden", `This access token lacks the '${scope}' scope.`);
    }
    const organizationId = await ctx.services.organizations.resolve(claims.organizationId);
    const auth = organizationId === claims.organizationId ? claims : { ...claims, organizationId };
    // tRPC merges what `next` is given into the context: only the new key is passed.
    return next({ ctx: { auth } });
  });

/**
 * A router-endpoint procedure: verified token with `scope`, and `ctx.teamId` resolved from the
 * token's team claim or the organization's default team (docs/api.md "Authentication").
 */
export const teamProcedure = (scope: TScope) =>
  authedProcedure(scope).use(async ({ ctx, next }) => {
    const teamId = await ctx.services.teams.resolve(ctx.auth);
    return next({ ctx: { teamId } });
  });
