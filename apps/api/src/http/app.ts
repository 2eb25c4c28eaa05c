import { createExpressMiddleware } from "@trpc/server/adapters/express";
import express, { type Express, type NextFunction, type Request, type RequestHandler, type Response } from "express";
import { renderMetrics, SpanStatusCode, serverSpan } from "@fleet/db";
import { requestIdFrom, runWithRequestId } from "@fleet/shared";
import type { Logger } from "pino";
import { observeRequest, RouteTemplates } from "../metrics/api-metrics.ts";
import type { Services } from "../services.ts";
import { contextFactory } from "../trpc/context.ts";
import type { AppRouter } from "../trpc/app-router.ts";
import { answerHeaders, procedureMetas } from "./answer-headers.ts";
import { adoptionScriptRoute, redactAdoptionPath } from "./adoption-script.ts";
import { type ConsoleOptions, consoleRouter } from "./console-page.ts";
import { docsRouter } from "./docs-page.ts";
import { describeError } from "../trpc/errors.ts";
import { depthRefusal } from "./json-depth.ts";
import { sendRestError } from "./error-shapes.ts";
import { carriesBody, isJsonMediaType, refuseNonJsonBodies } from "./media-type.ts";
import { buildOpenApiDocument } from "./openapi.ts";
import { restAdapter } from "./rest-adapter.ts";
import { SIGN_IN_PATH, signInRoutes } from "./sign-in-routes.ts";
import { trpcStreamCap } from "./stream-cap.ts";
import { sendTrpcError, trpcFastPath, trpcRefuseNonJson } from "./trpc-fast-path.ts";

export interface AppOptions {
  router: AppRouter;
  services: Services;
  logger: Logger;
  /** True once the database answers and migrations are applied. */
  isReady: () => Promise<boolean>;
  /** METRICS_TOKEN: bearer required for /metrics when set. */
  metricsToken?: string | undefined;
  publicUrl: string;
  /**
   * Serve plain JSON tRPC calls through `trpc-fast-path.ts` (default). Off, every call goes
   * through tRPC's own adapter: the reference the differential test compares the fast path with.
   */
  trpcFastPath?: boolean;
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
 * The common reads skip Express's chain of routes and middlewares: a GET without a body under
 * `/trpc/` or `/v1/` and `/api/` (but the adoption script) would pass every layer before its
 * handler untouched (no probe, docs or console path, no body to refuse or parse), so it goes
 * straight to the handler those layers lead to, with the mount point trimmed as Express does.
 * Whatever the tRPC fast path does not take continues down the whole chain with its URL restored.
 */
const frontDispatch =
  (trpcFast: RequestHandler | undefined, restPrepare: RequestHandler, restDispatch: RequestHandler) =>
  (req: Request, res: Response, next: NextFunction): void => {
    const url = req.url;
    if (req.method !== "GET" || carriesBody(req) || (url.startsWith("/trpc/") && !trpcFast)) {
      next();
      return;
    }
    if (trpcFast && url.startsWith("/trpc/")) {
      const baseUrl = req.baseUrl;
      req.url = url.slice("/trpc".length);
      req.baseUrl = `${baseUrl}/trpc`;
      trpcFast(req, res, (error?: unknown) => {
        req.url = url;
        req.baseUrl = baseUrl;
        next(error);
      });
      return;
    }
    if (
      (url.startsWith("/v1/") || url.startsWith("/api/")) &&
      !ADOPTION_PATH.test(req.path) &&
      !SIGN_IN_PATH.test(req.path)
    ) {
      restPrepare(req, res, () => restDispatch(req, res, next));
      return;
    }
    next();
  };

/**
 * Every request's span, id, metrics and log line (docs/operations.md "Metrics and probes",
 * "Tracing"), then `front`: the request runs with its id in context.
 */
const observeRequests = (
  routes: RouteTemplates,
  requestLog: Logger,
  front: (req: Request, res: Response, next: NextFunction) => void,
): RequestHandler => {
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
      runWithRequestId(requestId, () => front(req, res, next));
    });
};

export const createApp = (options: AppOptions): Express => {
  const { router, services, logger } = options;
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.set("query parser", "simple");

  const openapi = buildOpenApiDocument(router, options.publicUrl);
  const routes = new RouteTemplates(
    Object.keys(openapi.paths ?? {}),
    ["/livez", "/readyz", "/healthz", "/metrics", "/openapi.json"],
    Object.keys(router._def.procedures),
  );

  // The request line has fixed fields, none of them a secret (the path is cut before its query and
  // an adoption token is redacted from it by hand): pino's path redaction, which walks every
  // configured path on each line and cost more than the rest of the line (about 6 µs of the
  // ~9 µs; `npm run bench`), is skipped for it alone. Everything else logs through `logger`.
  const requestLog = logger.child({}, { redact: [] });

  const trpcContext = contextFactory(services, "trpc");
  const metas = procedureMetas(router);
  const trpcFast =
    options.trpcFastPath === false
      ? undefined
      : trpcFastPath({
          router,
          metas,
          createContext: trpcContext,
          maxBatchSize: MAX_BATCH_CALLS,
          onError: (error) => {
            if (describeError(error).status >= 500)
              logger.error({ err: (error as Error).cause ?? error }, "procedure failed");
          },
        });
  const [restPrepare, restDispatch] = restAdapter(router, services, (error) =>
    logger.error({ err: error }, "procedure failed"),
  );

  const front = frontDispatch(trpcFast, restPrepare, restDispatch);

  app.use(observeRequests(routes, requestLog, front));

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
    express.json({ limit: MAX_BODY_BYTES, strict: true, type: (req) => isJsonMediaType(req.headers["content-type"]) }),
    (req: Request, res: Response, next: NextFunction) => {
      // docs/api.md "Errors": refused like a bad field (422 naming it), before any procedure or
      // rule walks the value; tRPC answers in its own shape.
      const trpc = req.path.startsWith("/trpc/");
      const error = req.body === undefined ? undefined : depthRefusal(req.body, trpc && req.query.batch === "1");
      if (error === undefined) return next();
      if (trpc) sendTrpcError(router, res, error);
      else sendRestError(req, res, error);
    },
  );

  app.use("/trpc", trpcRefuseNonJson(router));
  // docs/api.md "Rate limits": open streams per credential and organization.
  app.use("/trpc", trpcStreamCap(router, services));
  if (trpcFast) app.use("/trpc", trpcFast);
  app.use(
    "/trpc",
    createExpressMiddleware({
      router,
      createContext: trpcContext,
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
  // here is an error thrown before it: the body rules' 400/413/415.
  app.use((error: unknown, req: Request, res: Response, _next: NextFunction) => {
    if (describeError(error).status >= 500) logger.error({ err: error }, "request failed");
    if (res.headersSent) return;
    sendRestError(req, res, error);
  });

  return app;
};
