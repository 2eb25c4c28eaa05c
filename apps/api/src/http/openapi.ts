import { ZApiError, ZV1Error } from "@fleet/shared";
import { generateOpenApiDocument } from "trpc-to-openapi";
import { z } from "zod";
import type { AppRouter } from "../trpc/app-router.ts";
import type { ProcedureMeta } from "../trpc/init.ts";
import { procedureMetas } from "./answer-headers.ts";
import { RestSurface } from "./rest-surface.ts";

type Doc = ReturnType<typeof generateOpenApiDocument>;
type Operation = { responses?: Record<string, unknown>; security?: unknown } & Record<string, unknown>;

const BODY_METHODS = new Set(["POST", "PUT", "PATCH"]);

/** What each error status means, per docs/api.md "Errors" (the body schema depends on the prefix). */
const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: "Malformed JSON.",
  401: "Missing, malformed, expired or wrongly signed credential.",
  402: "Payment required: no billing account at the billing root, or the card was declined.",
  403: "The token lacks the scope, or names a team of another organization.",
  404: "Unknown id, an id of another organization or team, or the endpoint is switched off.",
  405: "The method is not offered on this path (the `Allow` header lists the ones that are).",
  409: "The request conflicts with the current state (already exists, billed by a parent organization, ...).",
  413: "Body larger than 100 KiB.",
  415: "A body whose content type is not application/json.",
  422: "Validation failed (the fields are named; JSON nested deeper than 32 levels included), or the organization has no billing account yet.",
  429: "Too many requests: wait for `Retry-After` seconds.",
  500: "Unexpected error.",
  502: "The payment processor failed or is unreachable.",
  503: "The database is unreachable (retry after `Retry-After` seconds), or a finite pool is used up.",
};

/** A schema with a registered id comes back as a `$ref` plus definitions: keep the definition. */
const componentSchema = (schema: z.ZodType, id: string): unknown => {
  const json = z.toJSONSchema(schema, { target: "draft-2020-12", io: "output" }) as {
    $defs?: Record<string, unknown>;
    $schema?: string;
  };
  const { $schema: _schema, ...rest } = (json.$defs?.[id] ?? json) as { $schema?: string };
  return rest;
};

/** The statuses an operation can answer, from its method, path and meta (docs/api.md "Errors"). */
const errorStatuses = (method: string, path: string, meta: ProcedureMeta): number[] => {
  // 503: every operation needs the database (docs/api.md "Errors": an outage answers 503).
  const statuses = new Set<number>([422, 500, 503, ...(meta.rest?.errors ?? [])]);
  if (BODY_METHODS.has(method)) for (const status of [400, 413, 415]) statuses.add(status);
  const auth = meta.rest?.auth ?? "token";
  if (auth === "token") for (const status of [401, 403, 429]) statuses.add(status);
  if (auth === "none") statuses.add(429);
  if (auth === "login-hook") for (const status of [401, 429]) statuses.add(status);
  if (path.includes("{")) statuses.add(404);
  return [...statuses].sort((a, b) => a - b);
};

/**
 * The OpenAPI document of the REST face, generated from the procedures and their meta: each
 * operation's real success status, the statuses it can answer with the bodies really sent (`/v1`
 * plain errors, `/api` JSend), its security, and the aliases and refused methods the features
 * declare (rest-surface.ts). Nothing here names an endpoint.
 */
export const buildOpenApiDocument = (router: AppRouter, baseUrl: string): Doc => {
  const doc = generateOpenApiDocument(router, {
    title: "Fleet billing and router management API",
    description:
      "Billing accounts, payment methods and invoices (/v1), router inventory, health and transient port forwarding (/api). " +
      "Every operation is also a tRPC procedure at /trpc. Get a development token with POST /v1/auth/dev-login.",
    version: "1.0.0",
    baseUrl,
    securitySchemes: {
      Authorization: {
        type: "http",
        scheme: "bearer",
        description: "A user's access token (JWT), or an API key.",
      },
      LoginHookSecret: {
        type: "http",
        scheme: "bearer",
        description: "The identity provider's shared secret (AUTH_LOGIN_HOOK_SECRET), not a user's token.",
      },
    },
  });
  doc.info.license = { name: "Proprietary", identifier: "LicenseRef-Proprietary" } as never;
  doc.components = doc.components ?? {};
  doc.components.schemas = doc.components.schemas ?? {};
  const schemas = doc.components.schemas as Record<string, unknown>;
  for (const name of Object.keys(schemas)) if (name.startsWith("error.")) delete schemas[name];
  schemas.V1Error = componentSchema(ZV1Error, "V1Error");
  schemas.ApiError = componentSchema(ZApiError, "ApiError");

  const paths = (doc.paths ?? {}) as Record<string, Record<string, Operation>>;
  const metas = procedureMetas(router);
  const surface = new RestSurface(metas);

  const errorResponse = (path: string, status: number) => ({
    description: ERROR_DESCRIPTIONS[status] ?? "Error.",
    ...(status === 429 || status === 503 || status === 405
      ? {
          headers:
            status === 405
              ? { Allow: { description: "The methods this path offers.", schema: { type: "string" } } }
              : { "Retry-After": { description: "Whole seconds to wait.", schema: { type: "integer", minimum: 1 } } },
        }
      : {}),
    content: {
      "application/json": {
        schema: { $ref: `#/components/schemas/${path.startsWith("/api/") ? "ApiError" : "V1Error"}` },
      },
    },
  });

  for (const [, meta] of metas) {
    const openapi = meta.openapi;
    if (!openapi) continue;
    const method = openapi.method.toLowerCase();
    const op = paths[openapi.path]?.[method];
    if (!op?.responses) continue;
    const success = Object.entries(op.responses).find(([code]) => /^2\d\d$/.test(code));
    const status = meta.successStatus ?? 200;
    const ok =
      status === 204
        ? { description: "No Content" }
        : {
            ...(success?.[1] as object),
            ...(meta.noStore
              ? {
                  headers: {
                    "Cache-Control": { description: "Carries a secret: no-store.", schema: { type: "string" } },
                  },
                }
              : {}),
          };
    // Answers that are text (rest.text) or may also be CSV (rest.csv) say so (docs/api.md "Errors").
    const okContent = (ok as { content?: Record<string, unknown> }).content;
    if (meta.rest?.text) (ok as { content?: unknown }).content = { [meta.rest.text]: { schema: { type: "string" } } };
    else if (meta.rest?.csv && okContent) okContent["text/csv"] = { schema: { type: "string" } };
    op.responses = {
      [String(status)]: ok,
      ...Object.fromEntries(
        errorStatuses(openapi.method, openapi.path, meta).map((s) => [String(s), errorResponse(openapi.path, s)]),
      ),
    };
    const body = meta.rest?.body;
    if (body && !op.requestBody) {
      const schema = z.toJSONSchema(body, { target: "draft-2020-12", io: "input" }) as { $schema?: string };
      delete schema.$schema;
      op.requestBody = { required: true, content: { "application/json": { schema } } };
    }
    const auth = meta.rest?.auth ?? "token";
    op.security = auth === "none" ? [] : auth === "login-hook" ? [{ LoginHookSecret: [] }] : [{ Authorization: [] }];
  }

  for (const alias of surface.operations()) {
    if (!alias.canonical) continue;
    const source = paths[alias.canonical.path]?.[alias.canonical.method.toLowerCase()];
    if (!source) continue;
    paths[alias.path] = paths[alias.path] ?? {};
    (paths[alias.path] as Record<string, Operation>)[alias.method.toLowerCase()] = {
      ...source,
      operationId: `${String(source.operationId)}-${alias.method.toLowerCase()}-alias`,
      summary: `${String(source.summary ?? "")} (alias of ${alias.canonical.method} ${alias.canonical.path})`,
    };
  }

  for (const refused of surface.refused()) {
    paths[refused.path] = paths[refused.path] ?? {};
    const item = paths[refused.path] as Record<string, Operation>;
    const tags = Object.values(item).find((op) => Array.isArray(op.tags))?.tags;
    item[refused.method.toLowerCase()] = {
      operationId: `${refused.path.replace(/[^A-Za-z0-9]+/g, "-").replace(/^-|-$/g, "")}-${refused.method.toLowerCase()}-refused`,
      ...(tags ? { tags } : {}),
      summary: `Not offered: ${refused.message}`,
      security: [],
      responses: { "405": errorResponse(refused.path, 405) },
    };
  }

  // docs/api.md "Sign-in": the browser's redirects, served beside the procedures (http/sign-in-routes.ts).
  const redirect = (summary: string, parameters: string[], location: string): Operation => ({
    operationId: `auth-oidc-${parameters.includes("code") ? "callback" : "start"}`,
    tags: ["auth"],
    summary,
    security: [],
    parameters: parameters.map((name) => ({ name, in: "query", required: false, schema: { type: "string" } })),
    responses: {
      "302": {
        description: location,
        headers: {
          Location: { description: location, schema: { type: "string" } },
          "Set-Cookie": {
            description: "The cookie of this step (HttpOnly, SameSite=Lax).",
            schema: { type: "string" },
          },
        },
      },
      ...Object.fromEntries(
        [400, 404, 429, 502].map((status) => [String(status), errorResponse("/v1/auth/oidc", status)]),
      ),
    },
  });
  paths["/v1/auth/oidc/start"] = {
    get: redirect(
      "Sign in through the identity provider (OIDC_ISSUER)",
      ["return_to"],
      "The provider's authorization endpoint (code flow, PKCE, state, nonce).",
    ),
  };
  paths["/v1/auth/oidc/callback"] = {
    get: redirect(
      "The identity provider's redirect back: a new session",
      ["code", "state", "iss", "error"],
      "return_to, with the fleet_session cookie set.",
    ),
  };
  return doc;
};
