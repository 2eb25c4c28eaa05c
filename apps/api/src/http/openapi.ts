import { generateOpenApiDocument } from "trpc-to-openapi";
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
  return doc;
};
