import type { NextFunction, Request, RequestHandler, Response } from "express";
import { createOpenApiExpressMiddleware } from "trpc-to-openapi";
import type { Services } from "../services.ts";
import { contextFactory } from "../trpc/context.ts";
import type { AppRouter } from "../trpc/app-router.ts";
import type { ProcedureMeta } from "../trpc/init.ts";
import { answerHeaders, procedureMetas } from "./answer-headers.ts";
import { describeError, errorBodyForPath } from "./error-shapes.ts";
import { RestSurface } from "./rest-surface.ts";

const BODY_METHODS = new Set(["POST", "PATCH", "PUT"]);

/** One CSV field (RFC 4180): quoted when it holds a comma, quote or line break; a leading =+-@ is defused. */
const csvField = (value: unknown): string => {
  let text = value === null || value === undefined ? "" : String(value);
  // Spreadsheets run a cell that starts with one of these as a formula (CSV injection).
  if (typeof value === "string" && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
};

/** The rows of a JSend answer's `data` as CSV (header line first, CRLF line ends). */
export const toCsv = (columns: readonly string[], rows: readonly Record<string, unknown>[]): string =>
  [columns.join(","), ...rows.map((row) => columns.map((column) => csvField(row[column])).join(","))]
    .map((line) => `${line}\r\n`)
    .join("");

/**
 * How a successful answer of this operation is sent when it is not JSON (a procedure's
 * `rest.text` or `rest.csv` meta): undefined = as the library wrote it.
 */
const textRendering = (
  metas: ReadonlyMap<string, ProcedureMeta>,
  surface: RestSurface,
  req: Request,
  search: string,
): ((json: string) => { contentType: string; body: string }) | undefined => {
  const operation = surface.operationAt(req.method, req.path);
  const rest = operation ? metas.get(operation.procedurePath)?.rest : undefined;
  if (rest?.text) {
    const contentType = `${rest.text}; charset=utf-8`;
    return (json) => ({ contentType, body: String(JSON.parse(json)) });
  }
  const csv = rest?.csv;
  if (!csv) return undefined;
  const wantsCsv =
    new URLSearchParams(search).get("format") === "csv" || req.accepts(["application/json", "text/csv"]) === "text/csv";
  if (!wantsCsv) return undefined;
  return (json) => {
    const parsed = JSON.parse(json) as { data?: unknown };
    const rows = Array.isArray(parsed.data) ? (parsed.data as Record<string, unknown>[]) : [];
    return { contentType: "text/csv; charset=utf-8", body: toCsv(csv.columns, rows) };
  };
};

/** Success status per procedure path, from each procedure's meta (201 creates, 204 deletes). */
const successStatuses = (router: AppRouter): Map<string, number> => {
  const map = new Map<string, number>();
  for (const [path, procedure] of Object.entries(router._def.procedures)) {
    const meta = (procedure as unknown as { _def: { meta?: { successStatus?: number } } })._def.meta;
    if (meta?.successStatus) map.set(path, meta.successStatus);
  }
  return map;
};

/**
 * REST at the spec paths, generated from the same procedures as tRPC. trpc-to-openapi shapes error
 * bodies itself; this adapter replaces them with the contract's shapes (`/v1` plain, `/api` JSend)
 * and sets the contract's statuses (422 for validation, 201/204 for creates/deletes).
 */
export const restAdapter = (
  router: AppRouter,
  services: Services,
  onServerError: (error: unknown) => void,
): RequestHandler[] => {
  const statuses = successStatuses(router);
  const metas = procedureMetas(router);
  const surface = new RestSurface(metas);
  const createContext = contextFactory(services, "rest");

  const prepare = (req: Request, res: Response, next: NextFunction) => {
    // The surface the features declare (rest-surface.ts): aliases run as their operation, refused
    // and unlisted methods of a known path answer 405 with the methods it does take.
    const q = req.url.indexOf("?");
    const hit = surface.match(req.method, req.path, q === -1 ? "" : req.url.slice(q));
    if (hit?.kind === "alias") {
      req.method = hit.method;
      req.url = hit.url;
    } else if (hit) {
      res.status(405).setHeader("Allow", hit.allow.join(", "));
      res.json(
        errorBodyForPath(req.path, {
          status: 405,
          code: "method_not_allowed",
          message:
            hit.kind === "refused" ? hit.message : `${req.method} is not offered here; use ${hit.allow.join(", ")}.`,
          fields: undefined,
          extra: {},
        }),
      );
      return;
    }
    if (BODY_METHODS.has(req.method) && req.body === undefined) {
      // A body in another type than JSON was refused with 415 before (media-type.ts).
      // Endpoints without parameters may be called with no body at all.
      req.body = {};
    }
    // Parsed as JSON already (any spelling of the type); the library below compares it literally.
    if (BODY_METHODS.has(req.method)) req.headers["content-type"] = "application/json";
    if (
      BODY_METHODS.has(req.method) &&
      (typeof req.body !== "object" || req.body === null || Array.isArray(req.body))
    ) {
      // Bodies are merged with path parameters: anything but an object would be spread into nonsense.
      res.status(422);
      res.json(
        errorBodyForPath(req.path, {
          status: 422,
          code: "validation_failed",
          message: "The request body must be a JSON object.",
          fields: { body: ["must be a JSON object"] },
          extra: {},
        }),
      );
      return;
    }
    const rendering = textRendering(metas, surface, req, q === -1 ? "" : req.url.slice(q));
    // Swap the library's error body for the contract's; the status comes from responseMeta.
    const end = res.end.bind(res) as (...args: unknown[]) => Response;
    res.end = ((...args: unknown[]) => {
      const described = res.locals.restError as ReturnType<typeof describeError> | undefined;
      if (described) {
        const body = JSON.stringify(errorBodyForPath(req.path, described));
        res.setHeader("content-type", "application/json; charset=utf-8");
        return end(body);
      }
      if (rendering && res.statusCode === 200 && typeof args[0] === "string") {
        const rendered = rendering(args[0]);
        res.setHeader("content-type", rendered.contentType);
        res.removeHeader("content-length");
        return end(rendered.body);
      }
      return end(...args);
    }) as Response["end"];
    next();
  };

  const handler = createOpenApiExpressMiddleware({
    router,
    createContext,
    maxBodySize: 100 * 1024,
    onError: ({ error, req }) => {
      const described = describeError(error);
      const res = (req as Request).res;
      if (res) res.locals.restError = described;
      if (described.status >= 500) onServerError(error);
    },
    responseMeta: ({ errors, paths }) => {
      const described = errors.map(describeError);
      const headers = answerHeaders(metas, paths, described);
      const first = described[0];
      if (first) return { status: first.status, headers };
      const path = paths?.[0];
      return { status: (path && statuses.get(path)) ?? 200, headers };
    },
  } as Parameters<typeof createOpenApiExpressMiddleware>[0]) as unknown as RequestHandler;

  return [prepare, handler];
};
