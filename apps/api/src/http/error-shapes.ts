import { AppError, currentRequestId, type TErrorCode, type TFieldErrors } from "@fleet/shared";
import { TRPCError } from "@trpc/server";
import { STATUS_BY_TRPC_CODE } from "../trpc/error-codes.ts";

/** An error reduced to what any transport needs to render it. */
export interface DescribedError {
  status: number;
  code: TErrorCode | string;
  message: string;
  fields: TFieldErrors | undefined;
  extra: Record<string, unknown>;
  /** Seconds until a retry may succeed (429s); rendered as `Retry-After` by every transport. */
  retryAfterSeconds?: number | undefined;
}

interface Issue {
  path?: ReadonlyArray<PropertyKey | { key: PropertyKey }>;
  message: string;
}

const isIssueList = (value: unknown): value is Issue[] =>
  Array.isArray(value) && value.every((i) => typeof i === "object" && i !== null && "message" in i);

/** Standard-schema issues (zod 4) -> `{ "address.country": ["..."] }`. */
export const fieldErrors = (issues: readonly Issue[]): TFieldErrors => {
  const fields: TFieldErrors = {};
  for (const issue of issues) {
    const key =
      (issue.path ?? []).map((p) => String(typeof p === "object" && p !== null ? p.key : p)).join(".") || "body";
    const list = fields[key] ?? [];
    list.push(issue.message);
    fields[key] = list;
  }
  return fields;
};

const validationMessage = (fields: TFieldErrors): string => {
  const first = Object.entries(fields)[0];
  return first ? `The given data was invalid: ${first[0]} ${first[1][0]}.` : "The given data was invalid.";
};

/**
 * tRPC's input-parser refusal (BAD_REQUEST carrying the schema's issues) as the one validation
 * error of every transport (422 with field paths), or undefined for any other error.
 */
export const validationError = (error: TRPCError): AppError | undefined => {
  const issues = (error.cause as { issues?: unknown } | undefined)?.issues;
  if (error.code !== "BAD_REQUEST" || !isIssueList(issues)) return undefined;
  const fields = fieldErrors(issues);
  return new AppError("validation_failed", validationMessage(fields), { fields, cause: error.cause });
};

/** Body-parser errors carry `type` and `status`. */
interface HttpLikeError {
  type?: string;
  status?: number;
  expose?: boolean;
}

/** One place that decides status, code and message for anything thrown. */
export const describeError = (error: unknown): DescribedError => {
  const cause = error instanceof TRPCError && error.cause ? error.cause : error;
  if (cause instanceof AppError) {
    return {
      status: cause.status,
      code: cause.code,
      message: cause.status >= 500 && cause.code === "internal" ? "Internal server error." : cause.message,
      fields: cause.fields,
      extra: cause.extra ?? {},
      retryAfterSeconds: cause.retryAfterSeconds,
    };
  }
  if (error instanceof TRPCError) {
    const issues = (error.cause as { issues?: unknown } | undefined)?.issues;
    if (error.code === "BAD_REQUEST" && isIssueList(issues)) {
      const fields = fieldErrors(issues);
      return { status: 422, code: "validation_failed", message: validationMessage(fields), fields, extra: {} };
    }
    const status = STATUS_BY_TRPC_CODE[error.code] ?? (error.code === "PARSE_ERROR" ? 400 : 500);
    if (status >= 500)
      return { status, code: "internal", message: "Internal server error.", fields: undefined, extra: {} };
    return { status, code: error.code.toLowerCase(), message: error.message, fields: undefined, extra: {} };
  }
  const http = cause as HttpLikeError | undefined;
  if (http?.type === "entity.too.large") {
    return {
      status: 413,
      code: "payload_too_large",
      message: "The request body is larger than 100 KiB.",
      fields: undefined,
      extra: {},
    };
  }
  if (http?.type === "charset.unsupported" || http?.type === "encoding.unsupported") {
    return {
      status: 415,
      code: "unsupported_media_type",
      message: "Send the body as application/json in UTF-8, without content encoding.",
      fields: undefined,
      extra: {},
    };
  }
  if (http?.type === "entity.parse.failed") {
    return {
      status: 400,
      code: "bad_request",
      message: "The request body is not valid JSON.",
      fields: undefined,
      extra: {},
    };
  }
  if (typeof http?.status === "number" && http.status >= 400 && http.status < 500 && http.expose) {
    const message = (cause as Error).message || "Bad request.";
    return { status: http.status, code: "bad_request", message, fields: undefined, extra: {} };
  }
  return { status: 500, code: "internal", message: "Internal server error.", fields: undefined, extra: {} };
};

/** `/v1/...` body (docs/api.md "Errors"). */
export const v1ErrorBody = (e: DescribedError): Record<string, unknown> => ({
  message: e.message,
  ...e.extra,
  code: e.code,
  ...(e.fields ? { errors: e.fields } : {}),
});

/** `/api/...` JSend body (docs/api.md "Errors"): `fail` for 4xx, `error` for 5xx. */
export const apiErrorBody = (e: DescribedError): Record<string, unknown> => {
  if (e.status >= 500) return { status: "error", message: e.message, code: e.code };
  const data = e.fields ? Object.fromEntries(Object.entries(e.fields).map(([k, v]) => [k, v.join(" ")])) : undefined;
  return { status: "fail", message: e.message, code: e.code, ...(data ? { data } : {}), ...e.extra };
};

export const errorBodyForPath = (path: string, e: DescribedError): Record<string, unknown> => {
  const body = path.startsWith("/api/") || path === "/api" ? apiErrorBody(e) : v1ErrorBody(e);
  // docs/api.md "Errors": the request's id, so a user can quote it (docs/operations.md "Metrics and probes").
  const requestId = currentRequestId();
  return requestId === undefined ? body : { ...body, request_id: requestId };
};
