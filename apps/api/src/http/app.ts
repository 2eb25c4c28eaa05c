import { TRPCError } from "@trpc/server";
import { createExpressMiddleware } from "@trpc/server/adapters/express";
import express, { type Express, type NextFunction, type Request, type RequestHandler, type Response } from "express";
import { renderMetrics, SpanStatusCode, serverSpan } from "@fleet/runtime";
import { AppError, ERROR_STATUS, requestIdFrom, runWithRequestId, type TErrorCode } from "@fleet/shared";
import type { Logger } from "pino";
import { observeRequest, RouteTemplates } from "../metrics/api-metrics.ts";
import type { Services } from "../services.ts";
import { contextFactory } from "../trpc/context.ts";
import { trpcErrorBody } from "../trpc/init.ts";
import type { AppRouter } from "../trpc/app-router.ts";
import { answerHeaders, procedureMetas } from "./answer-headers.ts";
import { adoptionScriptRoute, redactAdoptionPath } from "./adoption-script.ts";
import { type ConsoleOptions, consoleRouter } from "./console-page.ts";
import { docsRouter } from "./docs-page.ts";
import { describeError } from "../trpc/errors.ts";
import { sendRestError } from "./error-shapes.ts";
import { depthRefusal } from "./json-depth.ts";
import { isJsonMediaType, refuseNonJsonBodies, takesBody } from "./media-type.ts";
import { buildOpenApiDocument } from "./openapi.ts";
import { restAdapter } from "./rest-adapter.ts";
import { SIGN_IN_PATH, signInRoutes } from "./sign-in-routes.ts";
import { trpcStreamCap } from "./stream-cap.ts";

export interface AppOptions {
  router: AppRouter;
  services: Services;
  logger: Logger;
  /** True once the database answers and migrations are applied. */
  isReady: () => Promise<boolean>;
  /** METRICS_TOKEN: bearer required for /metrics when set. */
  metricsToken?: string | undefined;
  publicUrl: string;
  /** The operator console at /console (docs/console.md); unset: not served. */
  console?: ConsoleOptions;
}

/** docs/api.md "Errors": bodies over 100 KiB answer 413. */
export const MAX_BODY_BYTES = 100 * 1024;
/** A tRPC batch may hold at most this many calls. */
export const MAX_BATCH_CALLS = 10;

/** The adoption script's paths (served before the REST adapter). */
const ADOPTION_PATH = /^\/+api\/+adoption(?:\/|$)/i;

/** Paths of probes and scrapes, logged at debug level (docs/operations.md "Probes"). */
const PROBES = new Set(["/livez", "/readyz", "/healthz", "/metrics"]);

/**
 * `router` entered only by paths under one prefix (`pattern` names it as Express matches paths: in
 * any case, and at least every path the router's own routes take): the API's requests skip walking
 * its layers one by one.
 */
const under =
  (pattern: RegExp, router: RequestHandler): RequestHandler =>
  (req, res, next) =>
    pattern.test(req.path) ? router(req, res, next) : next();

/**
 * Every request's span, id, metrics and log line (docs/operations.md "Metrics and probes",
 * "Tracing"); the request runs with its id in context.
 */
const observeRequests = (routes: RouteTemplates, requestLog: Logger): RequestHandler => {
  return (req: Request, res: Response, next: NextFunction) =>
    // docs/operations.md "Tracing": one server span per request (a no-op without a tracer).
    serverSpan(req.method, req.headers, (span) => {
      const started = process.hrtime.bigint();
      // docs/operations.md "Metrics and probes": every answer names its request; a valid incoming id
      // is kept so a caller's trace continues. Everything the request runs sees it (logs, errors).
      const requestId = requestIdFrom(req.headers["x-request-id"]);
      res.setHeader("X-Request-Id", requestId);
      res.setHeader("X-Content-Type-Options", "nosniff");
      res.on("finish", () => {
        const ms = Number(process.hrtime.bigint() - started) / 1e6;
        const pathname = req.originalUrl.split("?", 1)[0] ?? "/";
        const matched = routes.matchAll(pathname);
        observeRequest(matched, req.method, res.statusCode, ms / 1000);
        let traceId: string | undefined;
        // Without a tracer the span records nothing: its name and attributes would be built for nobody.
        if (span.isRecording()) {
          const route = matched.join(",");
          span.updateName(`${req.method} ${route}`);
          span.setAttributes({ "http.route": route, "http.response.status_code": res.statusCode });
          if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
          const context = span.spanContext();
          traceId = context.traceFlags === 0 ? undefined : context.traceId;
        }
        span.end();
        // Probes come every few seconds from every prober: debug, so they do not drown the log.
        const level = PROBES.has(pathname) ? "debug" : "info";
        if (!requestLog.isLevelEnabled(level)) return;
        requestLog[level](
          {
            request_id: requestId,
            ...(traceId ? { trace_id: traceId } : {}),
            method: req.method,
            path: redactAdoptionPath(pathname),
            status: res.statusCode,
            ms: Math.round(ms * 10) / 10,
          },
          "request",
        );
      });
      runWithRequestId(requestId, () => next());
    });
};

export const createApp = (options: AppOptions): Express => {
  const { router, services, logger } = options;
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.set("query parser", "simple");

  const openapi = buildOpenApiDocument(router, options.publicUrl);
  const metas = procedureMetas(router);
  const routes = new RouteTemplates(
    Object.keys(openapi.paths ?? {}),
    ["/livez", "/readyz", "/healthz", "/metrics", "/openapi.json"],
    metas.keys(),
  );

  // The request line has fixed fields, none of them a secret (the path is cut before its query and
  // an adoption token is redacted from it by hand): pino's path redaction, which walks every
  // configured path on each line and cost more than the rest of the line (about 6 µs of the
  // ~9 µs; `npm run bench`), is skipped for it alone. Everything else logs through `logger`.
  const requestLog = logger.child({}, { redact: [] });

  const trpcContext = contextFactory(services, "trpc");
  const [restPrepare, restDispatch] = restAdapter(router, services, (error) =>
    logger.error({ err: error }, "procedure failed"),
  );

  app.use(observeRequests(routes, requestLog));

  // docs/operations.md "Metrics and probes": liveness never touches the database (a slow database
  // must not get healthy processes restarted); readiness (and /healthz) needs it reachable and migrated.
  app.get("/livez", (_req, res) => {
    res.json({ status: "ok" });
  });
  const readiness = async (_req: Request, res: Response) => {
    const ready = await options.isReady().catch(() => false);
    res.status(ready ? 200 : 503).json({ status: ready ? "ok" : "unavailable" });
  };
  app.get("/healthz", readiness);
  app.get("/readyz", readiness);

  app.get("/metrics", async (req, res) => {
    const answer = await renderMetrics(req.headers.authorization, options.metricsToken);
    res.status(answer.status).set(answer.headers).send(answer.body);
  });

  app.get("/openapi.json", (_req, res) => {
    res.json(openapi);
  });
  // docs/api.md "Sign-in": the public keys of the system's own access tokens.
  app.get("/.well-known/jwks.json", async (_req, res, next) => {
    try {
      res.setHeader("Cache-Control", "public, max-age=300");
      res.json(await services.signIn.jwks());
    } catch (error) {
      next(error);
    }
  });
  app.use(under(/^\/docs(?:\/|$)/i, docsRouter()));
  // Before the JSON-only body rules: the console's card form posts the processor's own form encoding.
  if (options.console) app.use(under(/^\/console(?:\/|$)/i, consoleRouter(options.console)));

  // docs/billing.md "Webhooks": the processor's events. The signature covers the exact bytes sent,
  // so this one route takes the raw body, before the JSON parser below; no bearer header.
  app.post(
    "/v1/stripe/webhook",
    express.raw({ type: () => true, limit: MAX_BODY_BYTES }),
    async (req: Request, res: Response, next: NextFunction) => {
      try {
        const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
        const result = await services.stripeWebhooks.receive(body, req.get("stripe-signature"));
        res.status(200).json({ received: true, id: result.id, outcome: result.outcome });
      } catch (error) {
        next(error);
      }
    },
  );

  app.use(refuseNonJsonBodies);
  app.use(
    // Only `application/json` (any parameters) is parsed; other types never reach a procedure.
    // Not strict: `null`, a string or a number is valid JSON, refused as a body that is no object (422).
    express.json({
      limit: MAX_BODY_BYTES,
      strict: false,
      type: (req) => takesBody(req.method ?? "") && isJsonMediaType(req.headers["content-type"]),
    }),
    (req: Request, res: Response, next: NextFunction) => {
      // docs/api.md "Errors": refused like a bad field (422 naming it), before any procedure or
      // rule walks the value; tRPC answers in its own shape. A tRPC query's `input` is held to it too.
      const trpc = req.path.startsWith("/trpc/");
      const batch = trpc && req.query.batch === "1";
      let error = req.body === undefined ? undefined : depthRefusal(req.body, batch);
      if (error === undefined && trpc && typeof req.query.input === "string") {
        try {
          error = depthRefusal(JSON.parse(req.query.input), batch);
        } catch {
          // Not JSON: tRPC refuses it itself.
        }
      }
      if (error === undefined) return next();
      if (!trpc) return sendRestError(req, res, error);
      sendTrpcRefusal(res, error);
    },
  );

  // docs/api.md "Rate limits": open streams per credential and organization.
  app.use("/trpc", trpcStreamCap(services));

  app.use(
    "/trpc",
    createExpressMiddleware({
      router,
      createContext: (opts) => {
        // docs/api.md "Errors": a body in another type than JSON is 415. tRPC refuses most types
        // itself but reads multipart/form-data and application/octet-stream as input.
        const contentType = opts.req.headers["content-type"];
        if (opts.req.method === "POST" && !isJsonMediaType(contentType)) {
          throw new TRPCError({
            code: "UNSUPPORTED_MEDIA_TYPE",
            message: contentType ? `Unsupported content-type "${contentType}"` : "Missing content-type header",
          });
        }
        return trpcContext(opts);
      },
      maxBatchSize: MAX_BATCH_CALLS,
      responseMeta: ({ paths, errors }) => ({ headers: answerHeaders(metas, paths, errors.map(describeError)) }),
      onError: ({ error }) => {
        if (describeError(error).status >= 500) logger.error({ err: error.cause ?? error }, "procedure failed");
      },
    }),
  );

  app.use(under(ADOPTION_PATH, adoptionScriptRoute(services)));
  app.use(under(SIGN_IN_PATH, signInRoutes(services)));

  app.use(restPrepare, restDispatch);

  // The REST adapter answers every path that reaches it (an unknown one with 404), so what comes
  // here is an error thrown before it: the body rules' 400/413/415, in the shape of the path's
  // transport (tRPC's for /trpc).
  app.use((error: unknown, req: Request, res: Response, _next: NextFunction) => {
    const described = describeError(error);
    if (described.status >= 500) logger.error({ err: error }, "request failed");
    if (res.headersSent) return;
    if (!req.path.startsWith("/trpc/")) return sendRestError(req, res, error);
    const code = Object.hasOwn(ERROR_STATUS, described.code) ? (described.code as TErrorCode) : "internal";
    sendTrpcRefusal(res, new AppError(code, described.message));
  });

  return app;
};

/** A refusal made before tRPC reads the request: tRPC's shape, REST's status (docs/api.md "Errors"). */
const sendTrpcRefusal = (res: Response, error: AppError): void => {
  const body = JSON.stringify(trpcErrorBody(error));
  res.writeHead(error.status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
  res.end(body);
};
