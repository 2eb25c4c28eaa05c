import { Counter, Histogram } from "prom-client";

/**
 * The API's metrics (docs/operations.md "Metrics and probes"): one-line calls from the code that
 * sees the event. Labels are bounded sets only: a route template, never a path with ids in it.
 */
const httpRequests = new Counter({
  name: "fleet_http_requests_total",
  help: "HTTP requests answered by the API, by route template, method and status.",
  labelNames: ["route", "method", "status"] as const,
});

const httpDuration = new Histogram({
  name: "fleet_http_request_duration_seconds",
  help: "Time from request to the end of the answer, by route template, method and status.",
  labelNames: ["route", "method", "status"] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
});

const stripeCalls = new Counter({
  name: "fleet_stripe_calls_total",
  help: "Calls to Stripe (or the emulator) by result: ok, or error.",
  labelNames: ["result"] as const,
});

const webhookDeliveries = new Counter({
  name: "fleet_webhook_deliveries_total",
  help: "Outbound webhook delivery attempts by result: delivered, failed (will retry), dead (gave up).",
  labelNames: ["result"] as const,
});

const METHODS = new Set(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]);

/**
 * One answered request; `routes` comes from {@link RouteTemplates.matchAll}: one route, or one per
 * call of a tRPC batch (each call counted under its procedure, with the batch's status and time).
 */
export const observeRequest = (routes: readonly string[], method: string, status: number, seconds: number): void => {
  for (const route of routes) {
    const labels = { route, method: METHODS.has(method) ? method : "OTHER", status: String(status) };
    httpRequests.inc(labels);
    httpDuration.observe(labels, seconds);
  }
};

/** A Stripe call ended (`ok` or `error`). */
export const countStripeCall = (result: "ok" | "error"): void => stripeCalls.inc({ result });

/** A webhook delivery attempt ended. */
export const countWebhookDelivery = (result: "delivered" | "failed" | "dead"): void =>
  webhookDeliveries.inc({ result });

/**
 * Request paths to route templates: the OpenAPI paths (`/api/routers/{router_id}`) plus the fixed
 * ones; anything else is `unmatched`, so a scanner cannot grow the label set.
 */
export class RouteTemplates {
  readonly #exact = new Map<string, string>();
  readonly #patterns: Array<{ regex: RegExp; template: string }> = [];

  /** Known tRPC procedure paths (`account.get`): anything else under /trpc is `unmatched`. */
  readonly #procedures: ReadonlySet<string>;
  readonly #trpcLabels = new Map<string, readonly string[]>();

  constructor(openApiPaths: readonly string[], fixed: readonly string[], procedures: Iterable<string> = []) {
    this.#procedures = new Set(procedures);
    for (const path of fixed) this.#exact.set(path, path);
    for (const template of openApiPaths) {
      if (!template.includes("{")) {
        this.#exact.set(template, template);
        continue;
      }
      const source = template
        .split(/\{[^}]+\}/)
        .map((part) => part.replace(/[.*+?^$()|[\]\\]/g, "\\$&"))
        .join("[^/]+");
      this.#patterns.push({ regex: new RegExp(`^${source}$`), template });
    }
  }

  /**
   * Route labels of a request path as the client sent it (`req.originalUrl`'s path: Express strips
   * the mount point from `req.path` inside `app.use("/trpc", ...)`): `/trpc/<procedure>` for each
   * call of a tRPC request (`/trpc/a,b` is a batch of two), else one template.
   */
  matchAll(path: string): readonly string[] {
    if (path.startsWith("/trpc/")) {
      // The same few call paths come again and again: their labels are kept (a bounded set).
      const known = this.#trpcLabels.get(path);
      if (known) return known;
      const calls = path.slice("/trpc/".length).replace(/\/$/, "").split(",");
      const labels = calls.map((call) => {
        const procedure = safeDecode(call);
        return procedure !== undefined && this.#procedures.has(procedure) ? `/trpc/${procedure}` : "unmatched";
      });
      if (this.#trpcLabels.size >= TRPC_LABELS_KEPT) this.#trpcLabels.clear();
      this.#trpcLabels.set(path, labels);
      return labels;
    }
    return [this.match(path)];
  }

  match(path: string): string {
    const trimmed = path.length > 1 && path.endsWith("/") ? path.slice(0, -1) : path;
    const exact = this.#exact.get(trimmed);
    if (exact) return exact;
    if (trimmed.startsWith("/trpc/") || trimmed === "/trpc") return "unmatched";
    if (trimmed.startsWith("/docs")) return "/docs";
    for (const { regex, template } of this.#patterns) if (regex.test(trimmed)) return template;
    return "unmatched";
  }
}

/** tRPC paths whose labels are kept at most (a flood of distinct paths only empties the set). */
const TRPC_LABELS_KEPT = 1000;

const safeDecode = (text: string): string | undefined => {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
};
