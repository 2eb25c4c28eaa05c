import type { TRPC_ERROR_CODE_KEY } from "@trpc/server";

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
