import { isDatabaseUnreachable } from "@fleet/db";
import { AppError, type TErrorCode, type TFieldErrors } from "@fleet/shared";
import { type TRPC_ERROR_CODE_KEY, TRPCError } from "@trpc/server";

/**
 * The one place that decides what an error means to a client (status, code, message, field
 * errors, retry time) and how tRPC carries it. Each transport renders the description in its own
 * shape: tRPC's error formatter below, REST's bodies in `http/error-shapes.ts`.
 */

/** HTTP status -> tRPC code, so tRPC clients see the same status as REST clients. */
const BY_STATUS: Record<number, TRPC_ERROR_CODE_KEY> = {
  400: "BAD_REQUEST",
  401: "UNAUTHORIZED",
  402: "PAYMENT_REQUIRED",
  403: "FORBIDDEN",
  404: "NOT_FOUND",
  405: "METHOD_NOT_SUPPORTED",
  409: "CONFLICT",
  413: "PAYLOAD_TOO_LARGE",
  415: "UNSUPPORTED_MEDIA_TYPE",
  422: "UNPROCESSABLE_CONTENT",
  429: "TOO_MANY_REQUESTS",
  502: "BAD_GATEWAY",
  503: "SERVICE_UNAVAILABLE",
};

export const trpcCodeForStatus = (status: number): TRPC_ERROR_CODE_KEY => BY_STATUS[status] ?? "INTERNAL_SERVER_ERROR";

export const STATUS_BY_TRPC_CODE: Record<string, number> = Object.fromEntries(
  Object.entries(BY_STATUS).map(([status, code]) => [code, Number(status)]),
);

/** docs/api.md "Errors": while the database is unreachable, clients are told to retry after this. */
export const DATABASE_RETRY_AFTER_SECONDS = 5;

/**
 * A driver error that means the database cannot be reached, as the one AppError of an outage
 * (docs/api.md "Errors": 503 with `Retry-After`, never 500); undefined for any other error.
 */
export const databaseUnavailable = (error: unknown): AppError | undefined =>
  isDatabaseUnreachable(error)
    ? new AppError("database_unavailable", "The database is unreachable; try again shortly.", {
        retryAfterSeconds: DATABASE_RETRY_AFTER_SECONDS,
        cause: error,
      })
    : undefined;

/** An error reduced to what any transport needs to render it. */
export interface DescribedError {
  status: number;
  code: TErrorCode | string;
  message: string;
  fields: TFieldErrors | undefined;
  extra: Record<string, unknown>;
  /** Seconds until a retry may succeed (429s, 503s); rendered as `Retry-After` by every transport. */
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
  const thrown = error instanceof TRPCError && error.cause ? error.cause : error;
  const cause = thrown instanceof AppError ? thrown : (databaseUnavailable(thrown) ?? thrown);
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

/** An AppError as the TRPCError of the same HTTP status, so both transports agree. */
export const toTrpcError = (error: AppError): TRPCError =>
  new TRPCError({ code: trpcCodeForStatus(error.status), message: error.message, cause: error });

/**
 * tRPC's error formatter: the shape tRPC sends, with the described message and `data.appCode`,
 * the field paths as `data.errors` (as on /v1; `fields` is the older name) and any extra keys.
 */
export const formatTrpcError = <
  TShape extends { message: string; data: { code: string; httpStatus: number; path?: string } },
>(
  shape: TShape,
  error: unknown,
) => {
  const described = describeError(error);
  return {
    ...shape,
    message: described.message,
    data: {
      code: shape.data.code,
      httpStatus: shape.data.httpStatus,
      path: shape.data.path,
      appCode: described.code,
      ...(described.fields ? { errors: described.fields, fields: described.fields } : {}),
      ...described.extra,
    },
  };
};
