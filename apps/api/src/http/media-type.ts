import type { NextFunction, Request, Response } from "express";
import { AppError } from "@fleet/shared";
import { sendRestError } from "./error-shapes.ts";

/**
 * docs/api.md "Errors": JSON is the only body the API reads. `application/json` with parameters
 * (`; charset=utf-8`) is JSON; `application/vnd.api+json`, `text/plain` and every other type are not.
 */
export const isJsonMediaType = (contentType: string | undefined): boolean =>
  contentType !== undefined && /^\s*application\/json\s*(;|$)/i.test(contentType);

/**
 * The methods whose body the API reads. A GET, HEAD or DELETE has no operation that takes one: its
 * body is ignored, never parsed or refused (so those operations answer no 400, 413 or 415).
 */
export const takesBody = (method: string): boolean => method === "POST" || method === "PATCH" || method === "PUT";

/** A request carries a body the API reads when it says so: a length above zero, or a chunked transfer. */
export const carriesBody = (req: Request): boolean =>
  takesBody(req.method) &&
  (req.headers["transfer-encoding"] !== undefined || Number(req.headers["content-length"] ?? 0) > 0);

/**
 * REST (`/v1`, `/api`): a body in any other type than JSON (or with none named) answers 415 in the
 * error shape of its prefix, before anything is parsed. tRPC answers its own 415 in its own shape
 * (the tRPC context refuses what tRPC's adapter would read as input, `http/app.ts`).
 */
export const refuseNonJsonBodies = (req: Request, res: Response, next: NextFunction): void => {
  if (!carriesBody(req) || isJsonMediaType(req.headers["content-type"]) || req.path.startsWith("/trpc/")) {
    next();
    return;
  }
  const type = req.headers["content-type"];
  sendRestError(
    req,
    res,
    new AppError(
      "unsupported_media_type",
      type
        ? `Content type "${type.slice(0, 100)}" is not accepted: send the body as application/json.`
        : "The body has no content type: send it as application/json.",
    ),
  );
};
