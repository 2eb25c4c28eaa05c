import { currentRequestId } from "@fleet/shared";
import type { Request, Response } from "express";
import { type DescribedError, describeError } from "../trpc/errors.ts";
import { jsendError } from "../trpc/envelopes.ts";
import { answerHeaders } from "./answer-headers.ts";

/** `/v1/...` body (docs/api.md "Errors"). */
export const v1ErrorBody = (e: DescribedError): Record<string, unknown> => ({
  message: e.message,
  ...e.extra,
  code: e.code,
  ...(e.fields ? { errors: e.fields } : {}),
});

export const errorBodyForPath = (path: string, e: DescribedError): Record<string, unknown> => {
  const body = path.startsWith("/api/") || path === "/api" ? jsendError(e) : v1ErrorBody(e);
  // docs/api.md "Errors": the request's id, so a user can quote it (docs/operations.md "Metrics and probes").
  const requestId = currentRequestId();
  return requestId === undefined ? body : { ...body, request_id: requestId };
};

/**
 * The REST transport's one way to answer an error (the adapter's refusals and procedure errors,
 * the body rules, the last error handler): the described status, `Retry-After` on a 429, the
 * body of the path's prefix. `headers` adds what only the caller knows (no-store of a procedure).
 */
export const sendRestError = (
  req: Request,
  res: Response,
  error: unknown,
  headers: Record<string, string> = {},
): DescribedError => {
  const described = describeError(error);
  res.set({ ...answerHeaders(NO_METAS, undefined, [described]), ...headers });
  res.status(described.status).json(errorBodyForPath(req.path, described));
  return described;
};

const NO_METAS = new Map();
