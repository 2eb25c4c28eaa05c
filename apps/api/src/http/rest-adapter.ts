import { AppError } from "@fleet/shared";
import type { AnyTRPCProcedure } from "@trpc/server";
import type { NextFunction, Request, RequestHandler, Response } from "express";
import {
  coerceSchema,
  forEachOpenApiProcedure,
  getInputOutputParsers,
  getPathRegExp,
  instanceofZodTypeLikeVoid,
  instanceofZodTypeObject,
  instanceofZodTypeOptional,
  normalizePath,
  unwrapZodType,
  zodSupportsCoerce,
} from "trpc-to-openapi";
import type { ZodObject } from "zod";
import type { Services } from "../services.ts";
import { contextFactory } from "../trpc/context.ts";
import { invokeProcedure, proceduresOf } from "../trpc/invoke.ts";
import type { AppRouter } from "../trpc/app-router.ts";
import type { ProcedureMeta } from "../trpc/init.ts";
import { answerHeaders, procedureMetas } from "./answer-headers.ts";
import { describeError } from "../trpc/errors.ts";
import { sendRestError } from "./error-shapes.ts";
import { RestSurface } from "./rest-surface.ts";

const BODY_METHODS = new Set(["POST", "PATCH", "PUT"]);

/** A path the URL parser would give back unchanged: no dot segment, escape, backslash or other oddity. */
const PLAIN_PATH = /^\/[A-Za-z0-9_~/-]*$/;

/** The pathname of a request target as the WHATWG URL parser reads it (parsed only when it is not plain). */
const pathnameOf = (url: string): string => {
  const q = url.indexOf("?");
  const path = q === -1 ? url : url.slice(0, q);
  return PLAIN_PATH.test(path) ? path : new URL(`http://127.0.0.1${url}`).pathname;
};

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
 * One REST operation as trpc-to-openapi declares it (`forEachOpenApiProcedure`, its path pattern:
 * case-insensitive, named groups), with everything the library recomputed on every request
 * (the input parser, its unwrapped shape, which query keys are arrays) read once at start-up.
 */
interface Operation {
  procedurePath: string;
  /** The OpenAPI path template. */
  path: string;
  procedure: AnyTRPCProcedure;
  type: "query" | "mutation";
  pattern: RegExp;
  /** False for a `z.void()`-like input: the procedure then gets no input at all. */
  takesInput: boolean;
  /** The input's object schema, whose primitives are coerced from strings (query values). */
  objectSchema: ZodObject | undefined;
  /** Coercion is switched on the first time the operation is called, as the library did. */
  coerced: boolean;
  /** Query keys whose schema is an array: a single value becomes a one-element array. */
  arrayKeys: readonly string[];
  successStatus: number;
  rest: ProcedureMeta["rest"];
  /** The headers of a success (`answerHeaders` of this procedure without errors): fixed per operation. */
  successHeaders: ReadonlyArray<[string, string]> | undefined;
}

/**
 * For each method, the operations at a path without parameters that no earlier operation's pattern
 * also matches, by their lowercased path (the patterns ignore case): a request for one of them is
 * found by a lookup instead of trying every pattern in turn.
 */
const exactOperations = (byMethod: ReadonlyMap<string, Operation[]>): Map<string, Map<string, Operation>> => {
  const exact = new Map<string, Map<string, Operation>>();
  for (const [method, list] of byMethod) {
    const paths = new Map<string, Operation>();
    list.forEach((operation, index) => {
      const path = normalizePath(operation.path);
      if (path.includes("{") || list.slice(0, index).some((earlier) => earlier.pattern.test(path))) return;
      paths.set(path.toLowerCase(), operation);
    });
    exact.set(method, paths);
  }
  return exact;
};

const operationsOf = (router: AppRouter): Map<string, Operation[]> => {
  const byMethod = new Map<string, Operation[]>();
  const procedures = proceduresOf(router);
  forEachOpenApiProcedure(procedures as Parameters<typeof forEachOpenApiProcedure>[0], ({ path, procedure }) => {
    const trpcProcedure = procedure as unknown as AnyTRPCProcedure;
    const type = trpcProcedure._def.type;
    if (type === "subscription") return;
    const meta = trpcProcedure._def.meta as ProcedureMeta;
    const openapi = meta.openapi;
    if (!openapi) return;
    const { inputParser } = getInputOutputParsers(procedure);
    const unwrapped = unwrapZodType(inputParser as never, true);
    const objectSchema = zodSupportsCoerce && instanceofZodTypeObject(unwrapped) ? unwrapped : undefined;
    const arrayKeys = objectSchema
      ? Object.entries(objectSchema.shape)
          .filter(([, shape]) => {
            const kind = (shape as { _zod: { def: { type: string } } })._zod.def.type;
            if (kind === "array") return true;
            return kind === "optional" && instanceofZodTypeOptional(shape) && shape.unwrap()._zod.def.type === "array";
          })
          .map(([key]) => key)
      : [];
    const list = byMethod.get(openapi.method) ?? [];
    list.push({
      procedurePath: path,
      path: openapi.path,
      procedure: trpcProcedure,
      type,
      pattern: getPathRegExp(normalizePath(openapi.path)),
      takesInput: !instanceofZodTypeLikeVoid(unwrapped),
      objectSchema,
      coerced: false,
      arrayKeys,
      successStatus: meta.successStatus ?? 200,
      rest: meta.rest,
      successHeaders: undefined,
    });
    byMethod.set(openapi.method, list);
  });
  return byMethod;
};

/** Query values as trpc-to-openapi reads them: a repeated key is an array, an empty value is absent. */
const queryInput = (req: Request): Record<string, unknown> => {
  const query: Record<string, unknown> = {};
  const raw = req.query as Record<string, unknown>;
  for (const key of Object.keys(raw)) {
    const value = raw[key];
    if (value) query[key] = Array.isArray(value) && value.length === 1 ? value[0] : value;
  }
  return query;
};

/**
 * REST at the spec paths, generated from the same procedures as tRPC: trpc-to-openapi's dispatch
 * (its path patterns, its input rules: query or body merged with path parameters, array keys,
 * coercion of query strings) with the contract's answers: 201/204 from the meta, the JSON or text
 * rendering of a success, and every error in the shape of its prefix (`/v1` plain, `/api` JSend).
 * The library's own handler is not used: it turned each request into a Fetch `Request` for a signal
 * no procedure reads, built a caller proxy per request, recomputed the input parser and wrote its
 * own error body for this adapter to swap out. `http.test.ts` and the feature tests pin the answers.
 */
export const restAdapter = (
  router: AppRouter,
  services: Services,
  onServerError: (error: unknown) => void,
): [prepare: RequestHandler, dispatch: RequestHandler] => {
  const metas = procedureMetas(router);
  const surface = new RestSurface(metas);
  const operations = operationsOf(router);
  const exact = exactOperations(operations);
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
    if (BODY_METHODS.has(req.method) && req.body === undefined) {
      // A body in another type than JSON was refused with 415 before (media-type.ts).
      // Endpoints without parameters may be called with no body at all.
      req.body = {};
    }
    if (
      BODY_METHODS.has(req.method) &&
      (typeof req.body !== "object" || req.body === null || Array.isArray(req.body))
    ) {
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

  const handle = async (req: Request, res: Response, operation: Operation, pathInput: Record<string, string>) => {
    let input: unknown;
    if (operation.takesInput) {
      const useBody = BODY_METHODS.has(req.method);
      const values: Record<string, unknown> = { ...(useBody ? (req.body as object) : queryInput(req)), ...pathInput };
      if (!useBody) {
        for (const key of operation.arrayKeys) {
          if (values[key] !== undefined && !Array.isArray(values[key])) values[key] = [values[key]];
        }
      }
      input = values;
    }
    if (operation.objectSchema && !operation.coerced) {
      // The library switched coercion on in the shared schema at the first call; so does this.
      coerceSchema(operation.objectSchema);
      operation.coerced = true;
    }
    const ctx = createContext({ req, res });
    const data = await invokeProcedure(operation.procedure, {
      ctx,
      path: operation.procedurePath,
      type: operation.type,
      input,
    });
    operation.successHeaders ??= Object.entries(answerHeaders(metas, [operation.procedurePath], []));
    const headers = operation.successHeaders;
    const text = operation.successStatus === 200 ? textRendering(operation.rest, req) : undefined;
    res.statusCode = operation.successStatus;
    if (text) {
      const rendered = text(data);
      res.setHeader("content-type", rendered.contentType);
      for (const [name, value] of headers) res.setHeader(name, value);
      res.end(rendered.body);
      return;
    }
    res.setHeader("Content-Type", "application/json");
    for (const [name, value] of headers) res.setHeader(name, value);
    res.end(JSON.stringify(data));
  };

  /** The first operation of `method` whose pattern matches `path`, as the library searched. */
  const find = (method: string, path: string): { operation?: Operation; match?: RegExpExecArray } => {
    const known = exact.get(method)?.get(path.toLowerCase());
    // Lowercasing can equate characters the pattern's case folding keeps apart: the pattern decides.
    const match = known?.pattern.exec(path);
    if (known && match) return { operation: known, match };
    for (const candidate of operations.get(method) ?? []) {
      const found = candidate.pattern.exec(path);
      if (found) return { operation: candidate, match: found };
    }
    return {};
  };

  const dispatch = (req: Request, res: Response) => {
    const path = normalizePath(pathnameOf(req.url));
    const { operation, match } = find(req.method, path);
    if (!operation) {
      // As trpc-to-openapi answered: HEAD of an unknown path is an empty 204 (a warm-up probe).
      if (req.method === "HEAD") {
        res.statusCode = 204;
        res.setHeader("Content-Type", "application/json");
        res.end();
        return;
      }
      sendRestError(req, res, new AppError("not_found", "Not found"));
      return;
    }
    const found = operation;
    handle(req, res, found, { ...match?.groups }).catch((error: unknown) => {
      const described = describeError(error);
      if (described.status >= 500) onServerError(error);
      // The procedure's own headers too: an answer of a no-store operation is no-store, errors included.
      sendRestError(req, res, error, answerHeaders(metas, [found.procedurePath], [described]));
    });
  };

  return [prepare, dispatch];
};
