import { AppError, type TScope } from "@fleet/shared";
import { getTRPCErrorFromUnknown, getTRPCErrorShape, initTRPC, type TRPCError } from "@trpc/server";
import type { OpenApiMeta } from "trpc-to-openapi";
import type { z } from "zod";
import type { AuthClaims } from "../features/auth/token-verifier.ts";
import type { RequestContext } from "./context.ts";
import { databaseUnavailable, formatTrpcError, toTrpcError, validationError } from "./errors.ts";
import { addressKey } from "./rate-limit.ts";
import { inSpan, SpanStatusCode } from "@fleet/runtime";

type Span = Parameters<Parameters<typeof inSpan>[2]>[0];

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

/** What a middleware's `next` answers (tRPC's MiddlewareResult, as far as these middlewares read it). */
type Outcome = { ok: true } | { ok: false; error: TRPCError };

/**
 * A failed outcome of the span step (`traced`): the span marked failed, and a domain error or a
 * schema refusal thrown as the tRPC code of its status (both transports agree; a schema refusal
 * becomes the 422 of REST, docs/api.md "Errors").
 */
const failedOutcome = <R extends Outcome>(outcome: R): R => {
  if (outcome.ok) return outcome;
  const cause = knownCause(outcome.error.cause) ?? validationError(outcome.error);
  if (cause) throw toTrpcError(cause);
  return outcome;
};

/** A domain error, or a database outage as one; undefined for anything else. */
const knownCause = (error: unknown): AppError | undefined =>
  error instanceof AppError ? error : databaseUnavailable(error);

/** The span step's own work on the outcome: a failure marks the span. */
const markSpan = <R extends Outcome>(span: Span, outcome: R): R => {
  if (!outcome.ok) span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.error.message });
  return outcome;
};

/**
 * The step every procedure takes once: its span (docs/operations.md "Tracing", inside the request's
 * span) around `run`, which authorizes when the procedure needs it and calls the rest of the chain.
 * One middleware rather than one per concern: tRPC copies a call's options at every step of its chain.
 */
const traced = async <R extends Outcome>(path: string, run: () => Promise<R>): Promise<R> =>
  failedOutcome(
    await inSpan(`trpc ${path}`, { "rpc.system": "trpc", "rpc.method": path }, async (span) =>
      markSpan(span, await run()),
    ),
  );

/** A refusal of a step before the procedure's chain (authorization) as the tRPC code of its status. */
const refused = (error: unknown): never => {
  const cause = knownCause(error);
  throw cause ? toTrpcError(cause) : error;
};

/**
 * A procedure without a credential (sign-in): domain code throws AppError, and `traced` turns it
 * into the tRPC code of the same HTTP status so both transports agree; so do the authorized ones.
 */
export const publicProcedure = t.procedure.use(({ next, path }) => traced(path, () => next()));

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

/** The claims a request acts with: the organization id resolved to ours. */
const withOrganization = (claims: AuthClaims, organizationId: string): AuthClaims =>
  organizationId === claims.organizationId ? claims : { ...claims, organizationId };

const lacksScope = (scope: TScope) => new AppError("forbidden", `This access token lacks the '${scope}' scope.`);

/** The rate limiter's key of a verified credential. */
const credentialKey = (claims: AuthClaims): string => claims.credentialId ?? `sub:${claims.userId}`;

/**
 * The one authorization path (docs/api.md "Authentication", "Rate limits"): the credential
 * verified, counted against its rate limit, its scope checked, its organization resolved, in this
 * order. Each step answers from its cache without I/O when it can (a verified token, a count far
 * from the limit, a known organization); there is no second, synchronous copy of these rules.
 */
const authorize = async (ctx: RequestContext, scope: TScope | null): Promise<AuthClaims> => {
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
  await limits.api.hit(credentialKey(claims));
  if (scope !== null && !claims.scopes.has(scope)) throw lacksScope(scope);
  const resolved = withOrganization(claims, await ctx.services.organizations.resolve(claims.organizationId));
  return withinRole(await ctx.services.memberships.limit(resolved), scope);
};

/**
 * The credential narrowed to its holder's role in the organization (docs/api.md "Roles and
 * scopes"), and the scope checked again against what is left: a demoted member's token loses what
 * the role lost.
 */
const withinRole = (claims: AuthClaims, scope: TScope | null): AuthClaims => {
  if (scope !== null && !claims.scopes.has(scope)) throw lacksScope(scope);
  return claims;
};

/**
 * A procedure that needs a verified access token carrying `scope` (`ctx.auth`); null: any valid
 * token, as reads of the organization tree.
 */
export const authedProcedure = (scope: TScope | null) =>
  t.procedure.use(({ ctx, next, path }) =>
    traced(path, async () => next({ ctx: { auth: await authorize(ctx, scope).catch(refused) } })),
  );

/**
 * A router-endpoint procedure: verified token with `scope`, and `ctx.teamId` resolved from the
 * token's team claim or the organization's default team (docs/api.md "Authentication").
 */
export const teamProcedure = (scope: TScope) =>
  t.procedure.use(({ ctx, next, path }) =>
    traced(path, async () => {
      const auth = await authorize(ctx, scope).catch(refused);
      const teamId = await ctx.services.teams.resolve(auth).catch(refused);
      return next({ ctx: { auth, teamId } });
    }),
  );

/**
 * tRPC's error envelope of a refusal made before tRPC reads the request (a body nested too deep, a
 * stream over its cap), with the status and `data` the same refusal gets from a procedure
 * (docs/api.md "Errors").
 */
export const trpcErrorBody = (
  cause: unknown,
  path?: string,
  type: "query" | "mutation" | "subscription" | "unknown" = "unknown",
) => ({
  error: getTRPCErrorShape({
    config: t._config,
    error: cause instanceof AppError ? toTrpcError(cause) : getTRPCErrorFromUnknown(cause),
    type,
    path,
    input: undefined,
    ctx: undefined,
  }),
});
