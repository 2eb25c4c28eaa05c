import { type AnyTRPCProcedure, getTRPCErrorFromUnknown, getTRPCErrorShape, TRPCError } from "@trpc/server";
import { getHTTPStatusCode } from "@trpc/server/http";
import type { NextFunction, Request, RequestHandler, Response } from "express";
import type { AppRouter } from "../trpc/app-router.ts";
import { isJsonMediaType } from "./media-type.ts";
import type { RequestContext } from "../trpc/context.ts";
import { invokeProcedure, proceduresOf } from "../trpc/invoke.ts";
import type { ProcedureMeta } from "../trpc/init.ts";
import { answerHeaders } from "./answer-headers.ts";
import { depthRefusal } from "./json-depth.ts";
import { describeError, toTrpcError } from "../trpc/errors.ts";
import type { AppError } from "@fleet/shared";

interface FastPathOptions {
  router: AppRouter;
  /** Procedure metas by path (answer-headers.ts): `noStore` and friends. */
  metas: ReadonlyMap<string, ProcedureMeta>;
  createContext: (opts: { req: Request; res: Response }) => RequestContext;
  maxBatchSize: number;
  onError: (error: unknown, path: string) => void;
}

type Call = { path: string; procedure: AnyTRPCProcedure; input: unknown };

/**
 * tRPC's HTTP protocol for plain JSON queries and mutations (httpLink and httpBatchLink, no
 * transformer), answered without converting every request into a Fetch `Request` and back, which
 * costs more than the procedure itself. It speaks the same wire format and calls the same
 * procedures; anything else (subscriptions, streaming, method mismatches, malformed input,
 * oversized batches, bodies that are not exactly `application/json`) falls through to tRPC's own
 * adapter, which stays the reference: `trpc-fast-path.test.ts` sends the same requests through both
 * and requires equal answers, and tRPC is pinned exactly.
 *
 * Everything used is exported by `@trpc/server` except two reads of `_def`, which tRPC declares in
 * its public types but offers no accessor for: the procedures by path with their type (to decide,
 * before calling, whether a call is ours) and the router's config (its error formatter, for
 * `getTRPCErrorShape`). Both are read once, here, at start-up.
 */
export const trpcFastPath = (options: FastPathOptions): RequestHandler => {
  const procedures = proceduresOf(options.router);
  const config = options.router._def._config;

  return (req: Request, res: Response, next: NextFunction) => {
    if (req.headers["trpc-accept"] !== undefined || req.headers.accept?.includes("application/jsonl")) return next();
    // tRPC takes a POST body only as exactly application/json (else 415), and reads a GET with a
    // multipart or octet-stream content type as such: leave both to it.
    const media = mediaType(req.headers["content-type"]);
    if (
      req.method === "POST"
        ? media !== "application/json"
        : media === "multipart/form-data" || media === "application/octet-stream"
    )
      return next();
    const url = req.url;
    const q = url.indexOf("?");
    const pathPart = url.slice(1, q === -1 ? undefined : q);
    const search = new URLSearchParams(q === -1 ? "" : url.slice(q + 1));
    const isBatch = search.get("batch") === "1";
    let paths: string[];
    try {
      paths = isBatch ? decodeURIComponent(pathPart).split(",") : [decodeURIComponent(pathPart)];
    } catch {
      return next();
    }
    if (paths.length > options.maxBatchSize) return next();
    const type = req.method === "GET" ? "query" : req.method === "POST" ? "mutation" : undefined;
    if (!type) return next();

    let raw: unknown;
    if (type === "query") {
      const text = search.get("input");
      try {
        raw = text === null ? undefined : JSON.parse(text);
      } catch {
        return next();
      }
      // docs/api.md "Errors": a query's input is held to the bodies' depth limit.
      const deep = depthRefusal(raw, isBatch);
      if (deep) return sendTrpcError(options.router, res, deep);
    } else {
      raw = req.body;
    }
    const calls: Call[] = [];
    for (let i = 0; i < paths.length; i++) {
      const path = paths[i] as string;
      const procedure = Object.hasOwn(procedures, path) ? procedures[path] : undefined;
      if (!procedure || procedure._def.type !== type) return next();
      const input = isBatch ? (raw as Record<string, unknown> | undefined)?.[String(i)] : raw;
      calls.push({ path, procedure, input });
    }

    const ctx = options.createContext({ req, res });
    const errors: ReturnType<typeof describeError>[] = [];
    void Promise.all(
      calls.map(async (call) => {
        try {
          const data = await invokeProcedure(call.procedure, { ctx, path: call.path, type, input: call.input });
          return { result: { data } };
        } catch (cause) {
          const error = getTRPCErrorFromUnknown(cause);
          options.onError(error, call.path);
          errors.push(describeError(error));
          return { error: getTRPCErrorShape({ config, error, type, path: call.path, input: call.input, ctx }) };
        }
      }),
    ).then((envelopes) => {
      const body = isBatch ? envelopes : envelopes[0];
      const status = getHTTPStatusCode(body as Parameters<typeof getHTTPStatusCode>[0]);
      // Sent as a string: Node writes it in one piece with the head, without a Buffer copy first.
      const payload = JSON.stringify(body);
      res.writeHead(status, {
        ...answerHeaders(
          options.metas,
          calls.map((call) => call.path),
          errors,
        ),
        "content-type": "application/json",
        "content-length": Buffer.byteLength(payload),
      });
      res.end(payload);
    }, next);
  };
};

/**
 * docs/api.md "Errors": a tRPC POST whose body is not JSON answers 415, in front of the fast path
 * and tRPC's adapter alike. tRPC's adapter refuses most types itself but reads
 * `multipart/form-data` and `application/octet-stream` as procedure input; this answers every
 * non-JSON type with the adapter's own 415 envelope, so both paths stay equal.
 */
/**
 * A refusal made before tRPC reads the request (a body nested too deep), in tRPC's error envelope
 * with the status and `data` of the same refusal made by a procedure (docs/api.md "Errors").
 */
export const sendTrpcError = (router: AppRouter, res: Response, cause: AppError): void => {
  const error = toTrpcError(cause);
  const body = {
    error: getTRPCErrorShape({
      config: router._def._config,
      error,
      type: "unknown",
      path: undefined,
      input: undefined,
      ctx: undefined,
    }),
  };
  const payload = Buffer.from(JSON.stringify(body));
  res.writeHead(cause.status, { "content-type": "application/json", "content-length": payload.length });
  res.end(payload);
};

export const trpcRefuseNonJson = (router: AppRouter): RequestHandler => {
  const config = router._def._config;
  return (req: Request, res: Response, next: NextFunction) => {
    const contentType = req.headers["content-type"];
    if (req.method !== "POST" || isJsonMediaType(contentType)) return next();
    const error = new TRPCError({
      code: "UNSUPPORTED_MEDIA_TYPE",
      // The adapter's own wording (its missing closing quote included), so answers are identical.
      message: contentType ? `Unsupported content-type "${contentType}` : "Missing content-type header",
    });
    const body = {
      error: getTRPCErrorShape({ config, error, type: "unknown", path: undefined, input: undefined, ctx: undefined }),
    };
    const payload = Buffer.from(JSON.stringify(body));
    res.writeHead(415, { "content-type": "application/json", "content-length": payload.length });
    res.end(payload);
  };
};

/** The media type of a request, lowercased, without parameters (tRPC compares it this way). */
const mediaType = (header: string | undefined): string | undefined => header?.split(";", 1)[0]?.trim().toLowerCase();
