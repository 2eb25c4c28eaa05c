import { ZApiError, ZV1Error } from "@fleet/shared";
import { generateOpenApiDocument } from "trpc-to-openapi";
import { z } from "zod";
import type { AppRouter } from "../trpc/app-router.ts";

type Doc = ReturnType<typeof generateOpenApiDocument>;
type Operation = { responses?: Record<string, unknown> } & Record<string, unknown>;

/**
 * The OpenAPI document of the REST face, generated from the procedures, then amended with what the
 * generator cannot know: each operation's real success status and the PUT alias of the update.
 */
export const buildOpenApiDocument = (router: AppRouter, baseUrl: string): Doc => {
  const doc = generateOpenApiDocument(router, {
    title: "Fleet billing and router management API",
    description:
      "Billing accounts, payment methods and invoices (/v1), router inventory, health and transient port forwarding (/api). " +
      "Every operation is also a tRPC procedure at /trpc. Get a development token with POST /v1/auth/dev-login.",
    version: "1.0.0",
    baseUrl,
  });
  for (const [, procedure] of Object.entries(router._def.procedures)) {
    const meta = (
      procedure as unknown as {
        _def: { meta?: { successStatus?: number; openapi?: { method: string; path: string } } };
      }
    )._def.meta;
    const status = meta?.successStatus;
    const openapi = meta?.openapi;
    if (!status || status === 200 || !openapi) continue;
    const op = (doc.paths?.[openapi.path] as Record<string, Operation> | undefined)?.[openapi.method.toLowerCase()];
    if (op?.responses?.["200"]) {
      const { "200": ok, ...rest } = op.responses;
      op.responses = { [String(status)]: status === 204 ? { description: "No Content" } : ok, ...rest };
    }
  }
  const save = (doc.paths?.["/v1/account/tax"] as Record<string, Operation> | undefined)?.post;
  const paymentMethods = doc.paths?.["/v1/account/payment-methods"] as Record<string, Operation> | undefined;
  if (save && paymentMethods) {
    paymentMethods.post = {
      ...save,
      operationId: "paymentMethods-save-alias",
      summary: `${String(save.summary ?? "Save a payment method")} (alias of POST /v1/account/tax)`,
    };
  }
  const account = doc.paths?.["/v1/account"] as Record<string, Operation> | undefined;
  if (account?.patch) {
    account.put = {
      ...account.patch,
      operationId: "account-update-put",
      summary: "Update the billing account (PUT alias)",
    };
    account.delete = {
      operationId: "account-delete",
      tags: ["account"],
      summary: "Not available: contact support to close a billing account",
      responses: { "405": { description: "Deleting a billing account is not offered through the API." } },
    };
  }
  documentErrors(doc);
  return doc;
};

const BODY_METHODS = new Set(["post", "put", "patch"]);

/** A schema with a registered id comes back as a `$ref` plus definitions: keep the definition. */
const componentSchema = (schema: z.ZodType, id: string): unknown => {
  const json = z.toJSONSchema(schema, { target: "openapi-3.0" }) as { definitions?: Record<string, unknown> };
  return json.definitions?.[id] ?? json;
};

/**
 * The generator documents its own error bodies (`message`, `code`, `issues`; validation as 400).
 * Replace them with what the transports really answer (docs/api.md "Errors"): `/v1` plain errors,
 * `/api` JSend, 422 for validation, and the statuses every operation can produce.
 */
const documentErrors = (doc: Doc): void => {
  doc.components = doc.components ?? {};
  doc.components.schemas = doc.components.schemas ?? {};
  const schemas = doc.components.schemas as Record<string, unknown>;
  for (const name of Object.keys(schemas)) if (name.startsWith("error.")) delete schemas[name];
  schemas.V1Error = componentSchema(ZV1Error, "V1Error");
  schemas.ApiError = componentSchema(ZApiError, "ApiError");
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    const ref = { $ref: `#/components/schemas/${path.startsWith("/api/") ? "ApiError" : "V1Error"}` };
    const body = (description: string) => ({ description, content: { "application/json": { schema: ref } } });
    for (const [method, value] of Object.entries(item as Record<string, Operation>)) {
      if (!value || typeof value !== "object" || !value.responses) continue;
      const success = Object.fromEntries(Object.entries(value.responses).filter(([code]) => /^2\d\d$/.test(code)));
      const errors: Record<string, unknown> = {};
      const isProtected = Array.isArray(value.security) ? value.security.length > 0 : !path.startsWith("/v1/auth/");
      if (BODY_METHODS.has(method)) {
        errors["400"] = body("Malformed JSON, or JSON nested deeper than 32 levels.");
        errors["413"] = body("Body larger than 100 KiB.");
      }
      if (isProtected) {
        errors["401"] = body("Missing, malformed, expired or wrongly signed access token.");
        errors["403"] = body("The token lacks the scope, or names a team of another organization.");
      }
      if (path.includes("{")) errors["404"] = body("Unknown id, or an id of another organization or team.");
      const keep = Object.fromEntries(
        Object.entries(value.responses).filter(([code]) => ["402", "405", "409", "429", "502", "503"].includes(code)),
      );
      errors["422"] = body(
        path.startsWith("/v1/account")
          ? "Validation failed (`errors` by dotted field), or the organization has no billing account yet."
          : "Validation failed; `data` names the fields.",
      );
      errors["500"] = body("Unexpected error.");
      value.responses = { ...success, ...keep, ...errors };
    }
  }
};
