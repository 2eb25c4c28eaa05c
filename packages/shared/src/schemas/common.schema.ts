import { z } from "zod";

/** Error body of the `/v1/...` endpoints (docs/api.md "Errors"). */
export const ZV1Error = z
  .object({
    message: z.string(),
    documentation_url: z.string().optional(),
    code: z.string().optional(),
    errors: z.record(z.string(), z.array(z.string())).optional(),
    /** The request's `X-Request-Id`, to quote when asking for help. */
    request_id: z.string().optional(),
  })
  .meta({ id: "V1Error" });

/** JSend error body of the `/api/...` endpoints (docs/api.md "Errors"). */
export const ZApiError = z
  .object({
    status: z.enum(["fail", "error"]),
    message: z.string(),
    data: z.record(z.string(), z.string()).optional(),
    /** The request's `X-Request-Id`, to quote when asking for help. */
    request_id: z.string().optional(),
  })
  .meta({ id: "ApiError" });

/** A bare `204 No Content` answer. */
export const ZNoContent = z.void();
