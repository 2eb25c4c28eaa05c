// HTTP front: auth (secret/publishable keys), qs parameter parsing, idempotency keys, routing, Stripe error shapes.
import { createServer } from "node:http";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import qs from "qs";
import { openStateFile, type StateSaver } from "./emulator-persistence.ts";
import { type EmulatorClock, EmulatorStore, randomToken } from "./emulator-store.ts";
import { expandFields } from "./expand-fields.ts";
import { RawResponse, Router } from "./http-router.ts";
import type { KeyKind, RouteContext, RouteHandler } from "./http-router.ts";
import { list } from "./request-params.ts";
import type { Params } from "./request-params.ts";
import { registerCatalogRoutes } from "./routes/catalog-routes.ts";
import { registerCustomerRoutes } from "./routes/customers-routes.ts";
import { registerHostedInvoiceRoutes } from "./routes/hosted-invoice-routes.ts";
import { registerInvoiceItemRoutes } from "./routes/invoice-items-routes.ts";
import { registerInvoiceRoutes } from "./routes/invoices-routes.ts";
import { registerPaymentMethodRoutes } from "./routes/payment-methods-routes.ts";
import { registerSetupIntentRoutes } from "./routes/setup-intents-routes.ts";
import { registerSubscriptionRoutes } from "./routes/subscriptions-routes.ts";
import { StripeApiError, invalidRequest } from "./stripe-errors.ts";
import { EventRecorder, WebhookSender } from "./webhook-events.ts";
import type { WebhookEndpoint } from "./webhook-events.ts";

export interface StripeEmulatorOptions {
  /**
   * Interface to bind: 127.0.0.1 (default) or another loopback address. The emulator accepts any
   * test key, so it never listens beyond the machine (docs/billing.md "Stripe emulator").
   */
  host?: string;
  /** Directory the state is kept in (`stripe-emulator.json`); undefined or "memory": in memory only. */
  dataDir?: string;
  /** Where events are POSTed, signed with its secret; also settable later with `setWebhookEndpoint`. */
  webhook?: WebhookEndpoint;
  /** Port to bind; 0 (default) picks any free port. */
  port?: number;
  /** Current time; drives every `created`/period timestamp (a `Clock` of `@fleet/shared` fits). */
  clock?: EmulatorClock;
}

export interface StripeEmulator {
  url: string;
  port: number;
  /** The live in-memory state (for test inspection). */
  store: EmulatorStore;
  /** Starts (or stops, with undefined) delivering events; undelivered ones are kept meanwhile. */
  setWebhookEndpoint(endpoint: WebhookEndpoint | undefined): void;
  /** Resolves when no delivery is in flight (events waiting for a retry stay queued). */
  webhooksIdle(): Promise<void>;
  close(): Promise<void>;
}

const QS_OPTIONS = { depth: 20, arrayLimit: 1000, parameterLimit: 10_000 };

export function createRouter(): Router {
  const router = new Router();
  registerCustomerRoutes(router);
  registerPaymentMethodRoutes(router);
  registerSetupIntentRoutes(router);
  registerCatalogRoutes(router);
  registerInvoiceItemRoutes(router);
  registerInvoiceRoutes(router);
  registerSubscriptionRoutes(router);
  registerHostedInvoiceRoutes(router);
  return router;
}

function authenticate(req: IncomingMessage, params: Params): { kind: KeyKind; key: string } {
  const header = req.headers.authorization ?? "";
  let key: string | undefined;
  if (/^bearer /i.test(header)) key = header.slice(7).trim();
  else if (/^basic /i.test(header)) key = Buffer.from(header.slice(6), "base64").toString().split(":")[0];
  else if (typeof params.key === "string") key = params.key; // Stripe.js sends `key=pk_...` in the form body
  if (!key) {
    throw invalidRequest(
      "You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY'). See https://stripe.com/docs/api#authentication for details, or we can help at https://support.stripe.com/.",
      {},
      401,
    );
  }
  if (/^(sk|rk)_test_\S+$/.test(key)) return { kind: "secret", key };
  if (/^pk_test_\S+$/.test(key)) return { kind: "publishable", key };
  const redacted = key.length > 12 ? `${key.slice(0, 8)}${"*".repeat(key.length - 12)}${key.slice(-4)}` : key;
  throw invalidRequest(`Invalid API Key provided: ${redacted}`, {}, 401);
}

/** JSON with sorted keys, so the same params always fingerprint the same. */
function fingerprint(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(fingerprint).join(",")}]`;
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${fingerprint(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

interface Reply {
  status: number;
  body: string | Buffer;
  contentType: string;
  headers?: Record<string, string>;
}

const json = (status: number, body: unknown): Reply => ({
  status,
  body: JSON.stringify(body, null, 2),
  contentType: "application/json",
});

async function dispatch(store: EmulatorStore, router: Router, req: IncomingMessage): Promise<Reply> {
  const method = req.method ?? "GET";
  const url = new URL(req.url ?? "/", "http://emulator");
  const raw = await readBody(req);
  // From here the request runs synchronously: what it is handed is what it may change (TrackedMap).
  store.recording = method !== "GET" && method !== "HEAD";
  const params: Params = {
    ...(qs.parse(url.search.slice(1), QS_OPTIONS) as Params),
    ...(raw ? (qs.parse(raw, QS_OPTIONS) as Params) : {}),
  };
  const match = router.match(method, url.pathname);
  const baseUrl = `http://${req.headers.host ?? "127.0.0.1"}`;
  if (match?.options.public) {
    return run(match.handler, { store, path: match.path, params, keyKind: "secret", baseUrl });
  }
  const auth = authenticate(req, params);
  if (!match) {
    throw invalidRequest(
      `Unrecognized request URL (${method}: ${url.pathname}). Please see https://stripe.com/docs or we can help at https://support.stripe.com/.`,
      {},
      404,
    );
  }
  if (auth.kind === "publishable" && !match.options.publishable) {
    throw invalidRequest(
      "This API call cannot be made with a publishable API key. Please use a secret API key. You can find a list of your API keys at https://dashboard.stripe.com/account/apikeys.",
      {},
      403,
    );
  }
  const call = () => run(match.handler, { store, path: match.path, params, keyKind: auth.kind, baseUrl });
  const idemKey = req.headers["idempotency-key"];
  if (method !== "POST" || typeof idemKey !== "string" || idemKey === "") return call();

  const print = fingerprint(params);
  const previous = store.idempotency.get(idemKey);
  if (previous) {
    const idemError = (message: string) => new StripeApiError(400, { type: "idempotency_error", message });
    if (previous.method !== method || previous.path !== url.pathname) {
      throw idemError(
        `Keys for idempotent requests can only be used for the same endpoint they were first used for ('${previous.method} ${previous.path}' vs '${method} ${url.pathname}'). Try using a key other than '${idemKey}' if you meant to execute a different request.`,
      );
    }
    if (previous.fingerprint !== print) {
      throw idemError(
        `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${idemKey}' if you meant to execute a different request.`,
      );
    }
    return {
      status: previous.status,
      body: previous.body,
      contentType: "application/json",
      headers: { "Idempotent-Replayed": "true" },
    };
  }
  let reply: Reply;
  try {
    reply = call();
  } catch (err) {
    // Card errors happen after the request started executing, so Stripe saves them; validation errors are not saved.
    if (err instanceof StripeApiError && err.status === 402) reply = json(402, { error: err.body });
    else throw err;
  }
  if (reply.status < 400 || reply.status === 402) {
    store.idempotency.set(idemKey, {
      method,
      path: url.pathname,
      fingerprint: print,
      status: reply.status,
      body: reply.body.toString(),
    });
  }
  return reply;
}

function run(handler: RouteHandler, ctx: RouteContext): Reply {
  const result = handler(ctx);
  if (result instanceof RawResponse) return { status: 200, body: result.body, contentType: result.contentType };
  const expand = (list(ctx.params, "expand") ?? []).filter((x): x is string => typeof x === "string");
  return json(200, expandFields(ctx.store, result, expand));
}

function send(res: ServerResponse, requestId: string, reply: Reply): void {
  res.writeHead(reply.status, {
    "Content-Type": reply.contentType,
    "Content-Length": Buffer.byteLength(reply.body),
    "Request-Id": requestId,
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Expose-Headers": "Request-Id, Idempotent-Replayed",
    ...reply.headers,
  });
  res.end(reply.body);
}

export async function startStripeEmulator(opts: StripeEmulatorOptions = {}): Promise<StripeEmulator> {
  const host = opts.host ?? "127.0.0.1";
  if (!/^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host) && host !== "::1" && host !== "localhost") {
    throw new Error(`the Stripe emulator listens on loopback only, not on ${host}`);
  }
  const store = new EmulatorStore({ clock: opts.clock });
  const save: StateSaver = opts.dataDir && opts.dataDir !== "memory" ? openStateFile(store, opts.dataDir) : () => {};
  const recorder = new EventRecorder(store);
  const sender = new WebhookSender(store, save);
  // After every request that may have changed something: events into the outbox, state to disk
  // (before the answer, so an acknowledged change survives a crash), then delivery.
  const commit = (req: IncomingMessage, requestId: string) => {
    if (req.method === "GET" || req.method === "HEAD") return;
    store.recording = false;
    const touched = store.takeTouched();
    const key = req.headers["idempotency-key"];
    recorder.record(requestId, typeof key === "string" ? key : null, touched);
    save(touched);
    sender.kick();
  };
  const router = createRouter();
  const server = createServer((req, res) => {
    const requestId = `req_${randomToken(14)}`;
    if (req.method === "OPTIONS") {
      res.writeHead(204, {
        "Access-Control-Allow-Origin": "*",
        "Access-Control-Allow-Methods": "GET, POST, DELETE, OPTIONS",
        "Access-Control-Allow-Headers": "Authorization, Content-Type, Idempotency-Key, Stripe-Version, Stripe-Account",
        "Access-Control-Max-Age": "600",
      });
      res.end();
      return;
    }
    dispatch(store, router, req)
      .catch((err: unknown): Reply => {
        if (err instanceof StripeApiError) return json(err.status, { error: err.body });
        const message = err instanceof Error ? err.message : String(err);
        return json(500, { error: { type: "api_error", message: `Emulator error: ${message}` } });
      })
      .then((reply) => {
        commit(req, requestId);
        send(res, requestId, reply);
      })
      .catch(() => res.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port ?? 0, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const publicHost = host.includes(":") ? `[${host}]` : host;
  sender.setEndpoint(opts.webhook);
  return {
    url: `http://${publicHost}:${port}`,
    port,
    store,
    setWebhookEndpoint: (endpoint) => sender.setEndpoint(endpoint),
    webhooksIdle: () => sender.idle(),
    close: async () => {
      await sender.close();
      await new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      });
    },
  };
}
