import { z } from "zod";
import { textRule } from "../rules/text-rules.ts";

/** Error body of the `/v1/...` endpoints (docs/api.md "Errors"). */
export const ZV1Error = z
  .looseObject({
    message: z.string(),
    documentation_url: z.string().optional(),
    code: z
      .string()
      .optional()
      .meta({ description: "Machine-readable error code (validation_failed, rate_limited, ...)." }),
    errors: z
      .record(z.string(), z.array(z.string()))
      .optional()
      .meta({ description: "Validation failures by dotted field name." }),
    billing_organization_id: z
      .string()
      .optional()
      .meta({ description: "With billed_by_parent (409): the organization whose account pays." }),
    request_id: z
      .string()
      .optional()
      .meta({ description: "The request's X-Request-Id, to quote when asking for help." }),
  })
  .meta({ id: "V1Error", description: 'Further keys may appear (docs/api.md "Errors").' });

/** JSend error body of the `/api/...` endpoints (docs/api.md "Errors"). */
export const ZApiError = z
  .looseObject({
    status: z.enum(["fail", "error"]).meta({ description: "fail for 4xx, error for 5xx (JSend)." }),
    message: z.string(),
    code: z.string().optional().meta({ description: "Machine-readable error code." }),
    data: z.record(z.string(), z.string()).optional().meta({ description: "Validation failures by field name." }),
    documentation_url: z.string().optional(),
    billing_organization_id: z.string().optional(),
    request_id: z
      .string()
      .optional()
      .meta({ description: "The request's X-Request-Id, to quote when asking for help." }),
  })
  .meta({ id: "ApiError", description: 'Further keys may appear (docs/api.md "Errors").' });

/** A bare `204 No Content` answer. */
export const ZNoContent = z.void();

/**
 * The `/api` success envelope (docs/api.md "Routers": `status` and `data`), the one schema of it;
 * `trpc/envelopes.ts` builds the answers. A paged list extends it with `next_cursor`.
 */
export const successEnvelope = <T extends z.ZodType>(data: T) => z.object({ status: z.literal("success"), data });

/**
 * A page's `limit` in a query string: text, so coerced to an integer, refused outside the limits
 * with one message naming them (docs/api.md "Errors").
 */
export const queryLimit = (limits: { min: number; max: number }) => {
  const error = `must be an integer between ${limits.min} and ${limits.max}`;
  return z.coerce.number({ error }).int({ error }).min(limits.min, { error }).max(limits.max, { error });
};

/** A page's `cursor` in a query string: a `next_cursor` given back, under the text rule. */
export const queryCursor = () => textRule(z.string().max(200, { error: "is not a valid cursor" }));
