import { AppError } from "@fleet/shared";
import type { NextFunction, Request, RequestHandler, Response } from "express";
import { createOpenApiNodeHttpHandler } from "trpc-to-openapi";
import type { Services } from "../services.ts";
import { contextFactory } from "../trpc/context.ts";
import type { AppRouter } from "../trpc/app-router.ts";
import type { ProcedureMeta } from "../trpc/init.ts";
import { answerHeaders, procedureMetas } from "./answer-headers.ts";
import { describeError } from "../trpc/errors.ts";
import { sendRestError } from "./error-shapes.ts";
import { takesBody } from "./media-type.ts";
import { RestSurface } from "./rest-surface.ts";

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
 * `rest.text` or `rest.csv` meta): undefined = as JSON.
 */
const textRendering = (
  rest: ProcedureMeta["rest"],
  req: Request,
): ((data: unknown) => { contentType: string; body: string }) | undefined => {
  if (rest?.text) {
    const contentType = `${rest.text}; charset=utf-8`;
    return (data) => ({ contentType, body: String(data) });
  }
  const csv = rest?.csv;
  if (!csv) return undefined;
  const format = (req.query as Record<string, unknown>).format;
  const wantsCsv =
    (Array.isArray(format) ? format[0] : format) === "csv" ||
    req.accepts(["application/json", "text/csv"]) === "text/csv";
  if (!wantsCsv) return undefined;
  return (data) => {
    // The rows as the JSON answer would carry them (dates as strings, and so on).
    const parsed = JSON.parse(JSON.stringify(data)) as { data?: unknown };
    const rows = Array.isArray(parsed.data) ? (parsed.data as Record<string, unknown>[]) : [];
    return { contentType: "text/csv; charset=utf-8", body: toCsv(csv.columns, rows) };
  };
};

/**
 * trpc-to-openapi drops a query parameter whose value is empty (`?limit=`), which would then read as
 * absent: kept (as a one-value list, which it passes through), so the field's own rule judges it
 * (422 naming it where an empty value is none).
 */
const keepEmptyQueryValues = (req: Request): void => {
  const query = req.query as Record<string, unknown>;
  let kept: Record<string, unknown> | undefined;
  for (const [key, value] of Object.entries(query)) {
    if (value !== "") continue;
    kept ??= { ...query };
    kept[key] = [""];
  }
  // Express's `query` is a getter that parses the URL again: an own property shadows it.
  if (kept) Object.defineProperty(req, "query", { value: kept, configurable: true, enumerable: true, writable: true });
};

/** What trpc-to-openapi's handler wrote, held until the adapter renders it in the contract's shape. */
interface HeldAnswer {
  status: number;
  headers: Map<string, string | number | readonly string[]>;
  body: string | undefined;
}

/**
 * Holds what the library writes (status, headers, body) instead of sending it: the real response's
 * `setHeader` and `end` are swapped for holding ones until the library ends its answer (or gives
 * up), so everything else it and the procedures use (events, state) is the response itself. Not a
 * stand-in whose prototype is the response: an object made a prototype gets a map of its own in V8,
 * so every response would have sent Node's and Express's response code megamorphic.
 */
const holdResponse = (res: Response, done: (answer: HeldAnswer) => void): (() => void) => {
  const headers = new Map<string, string | number | readonly string[]>();
  const { setHeader, end } = res;
  const release = () => {
    res.setHeader = setHeader;
    res.end = end;
  };
  res.setHeader = function holdHeader(this: Response, name: string, value: string | number | readonly string[]) {
    headers.set(name.toLowerCase(), value);
    return this;
  } as Response["setHeader"];
  res.end = function holdEnd(this: Response, body?: unknown) {
    release();
    done({ status: res.statusCode, headers, body: typeof body === "string" ? body : undefined });
    return this;
  } as Response["end"];
  return release;
};

/** What the library reported of a request's procedure: its path and its answer or error. */
interface Outcome {
  path: string | undefined;
  data?: unknown;
  error?: unknown;
}

/**
 * The outcome is held on the request itself: a WeakMap entry per request cost about a microsecond
 * and left an ephemeron for every young-generation GC to walk (`npm run bench`, the REST profile).
 */
const OUTCOME = Symbol("restOutcome");
type WithOutcome = Request & { [OUTCOME]?: Outcome };

/**
 * REST at the spec paths, generated from the same procedures as tRPC: trpc-to-openapi's handler
 * (its path patterns, its input rules, its call of the procedure) behind the contract's answers
 * (docs/api.md "Errors"): aliases and 405 from the procedures' `rest` meta, 201/204 from
 * `successStatus`, text and CSV renderings of a success, and every error in the shape of its prefix
 * (`/v1` plain, `/api` JSend) instead of the library's own body.
 */
export const restAdapter = (
  router: AppRouter,
  services: Services,
  onServerError: (error: unknown) => void,
): [prepare: RequestHandler, dispatch: RequestHandler] => {
  const metas = procedureMetas(router);
  const surface = new RestSurface(metas);
  const createContext = contextFactory(services, "rest");
  const handler = createOpenApiNodeHttpHandler<AppRouter, Request, Response>({
    router,
    createContext: ({ req, res }) => createContext({ req, res }),
    responseMeta: ({ ctx, paths, data, errors }) => {
      const path = paths?.[0];
      if (ctx && errors.length === 0) (ctx.req as WithOutcome)[OUTCOME] = { path, data: data[0] };
      const meta = path === undefined ? undefined : metas.get(path);
      return { status: meta?.successStatus ?? 200, headers: answerHeaders(metas, paths, []) };
    },
    onError: ({ error, req, path }) => {
      (req as WithOutcome)[OUTCOME] = { path, error };
    },
  });

  const prepare = (req: Request, res: Response, next: NextFunction) => {
    // The surface the features declare (rest-surface.ts): aliases run as their operation, refused
    // and unlisted methods of a known path answer 405 with the methods it does take.
    const q = req.url.indexOf("?");
    const hit = surface.match(req.method, req.path, q === -1 ? "" : req.url.slice(q));
    if (hit?.kind === "alias") {
      req.method = hit.method;
      req.url = hit.url;
    } else if (hit) {
      res.setHeader("Allow", hit.allow.join(", "));
      sendRestError(
        req,
        res,
        new AppError(
          "method_not_allowed",
          hit.kind === "refused" ? hit.message : `${req.method} is not offered here; use ${hit.allow.join(", ")}.`,
        ),
      );
      return;
    }
    if (q !== -1) keepEmptyQueryValues(req);
    if (takesBody(req.method)) {
      // A body in another type than JSON was refused with 415 before (media-type.ts); endpoints
      // without parameters may be called with no body at all. The library takes a body only as
      // `application/json`, spelled so: what reaches it was parsed as JSON, whatever its spelling.
      if (req.body === undefined) req.body = {};
      req.headers["content-type"] = "application/json";
    }
    if (takesBody(req.method) && (typeof req.body !== "object" || req.body === null || Array.isArray(req.body))) {
      // Bodies are merged with path parameters: anything but an object would be spread into nonsense.
      sendRestError(
        req,
        res,
        new AppError("validation_failed", "The request body must be a JSON object.", {
          fields: { body: ["must be a JSON object"] },
        }),
      );
      return;
    }
    next();
  };

  const render = (req: Request, res: Response, answer: HeldAnswer | undefined) => {
    if (!answer) {
      // As trpc-to-openapi answers on its own: HEAD of an unknown path is an empty 204 (a warm-up probe).
      if (req.method === "HEAD") {
        res.status(204).setHeader("Content-Type", "application/json").end();
        return;
      }
      sendRestError(req, res, new AppError("not_found", "Not found"));
      return;
    }
    const outcome = (req as WithOutcome)[OUTCOME];
    // Headers a procedure set on its way (a rate limiter's), then the contract's answer.
    for (const [name, value] of answer.headers) if (name !== "content-type") res.setHeader(name, value);
    if (outcome?.error !== undefined) {
      const described = describeError(outcome.error);
      if (described.status >= 500) onServerError(outcome.error);
      // The procedure's own headers too: an answer of a no-store operation is no-store, errors included.
      sendRestError(req, res, outcome.error, answerHeaders(metas, [outcome.path], [described]));
      return;
    }
    const meta = outcome?.path === undefined ? undefined : metas.get(outcome.path);
    const text = answer.status === 200 ? textRendering(meta?.rest, req) : undefined;
    res.statusCode = answer.status;
    if (text) {
      const rendered = text(outcome?.data);
      res.setHeader("Content-Type", rendered.contentType);
      res.end(rendered.body);
      return;
    }
    res.setHeader("Content-Type", "application/json");
    res.end(answer.body);
  };

  const dispatch = (req: Request, res: Response, next: NextFunction) => {
    let release = () => {};
    new Promise<HeldAnswer | undefined>((resolve) => {
      release = holdResponse(res, resolve);
      handler(req, res, () => resolve(undefined)).catch((error: unknown) => {
        release();
        next(error);
      });
    }).then((answer) => {
      release();
      render(req, res, answer);
    }, next);
  };

  return [prepare, dispatch];
};
