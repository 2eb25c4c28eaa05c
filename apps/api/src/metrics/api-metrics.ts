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

/** The per-series state prom-client keeps (not in its types): by label hash, the series' values. */
type SeriesMap<V> = Record<string, V | undefined>;
interface CounterInternals {
  hashMap: SeriesMap<{ value: number }>;
}
interface HistogramInternals {
  hashMap: SeriesMap<{ sum: number; count: number; bucketValues: Record<string, number> }>;
  upperBounds: number[];
}

/**
 * A request counter and a duration histogram with the same label names, counted per label set
 * without prom-client's per-call work: `inc(labels)` and `observe(labels, v)` sort and join the
 * labels into a hash, validate them and turn the histogram's bound into a property name on every
 * call. Here a label set's hash (the one prom-client's first `inc` answers) and the bounds' names
 * are found once; later requests add to the series prom-client keeps under that hash, exactly as
 * its own calls would. A series prom-client does not hold (the first of a label set, or after a
 * `reset`) goes through prom-client's own calls. `api-metrics.test.ts` holds the scrape equal to
 * prom-client's.
 */
type RequestLabel = "route" | "method" | "status";

/**
 * The one door to prom-client's undocumented fields (its series by label hash, a histogram's
 * bounds, the hash `inc` answers): the types above say what is read; api-metrics.test.ts holds the
 * scrape equal to prom-client's own, so an upgrade that moves them fails there, not in production.
 */
const internals = <T>(value: unknown): T => value as T;

export class RequestSeries {
  readonly #counter: Counter<RequestLabel>;
  readonly #histogram: Histogram<RequestLabel>;
  /** Each bound's property name in a series' `bucketValues`, in the order of the bounds. */
  readonly #bounds: ReadonlyArray<{ bound: number; key: string }>;
  readonly #bound = new Map<string, { labels: Record<RequestLabel, string>; hash: string | undefined }>();

  constructor(counter: Counter<RequestLabel>, histogram: Histogram<RequestLabel>) {
    this.#counter = counter;
    this.#histogram = histogram;
    this.#bounds = internals<HistogramInternals>(histogram).upperBounds.map((bound) => ({
      bound,
      key: String(bound),
    }));
  }

  /**
   * One request of `route`, `method` and `status` that took `seconds`. At most `SERIES_KEPT` label
   * sets are remembered here; the metrics' own series are unaffected by forgetting one.
   */
  observe(route: string, method: string, status: number, seconds: number): void {
    const key = `${status} ${method} ${route}`;
    let series = this.#bound.get(key);
    if (!series) {
      if (this.#bound.size >= SERIES_KEPT) this.#bound.clear();
      series = { labels: { route, method, status: String(status) }, hash: undefined };
      this.#bound.set(key, series);
    }
    const hash = series.hash;
    const counted = hash === undefined ? undefined : internals<CounterInternals>(this.#counter).hashMap[hash];
    const timed = hash === undefined ? undefined : internals<HistogramInternals>(this.#histogram).hashMap[hash];
    if (counted === undefined || timed === undefined || !Number.isFinite(seconds)) {
      // prom-client's own calls: they make the series, and answer the hash they keep it under.
      series.hash = internals<{ labelHash: string }>(this.#counter.inc(series.labels)).labelHash;
      this.#histogram.observe(series.labels, seconds);
      return;
    }
    counted.value += 1;
    timed.sum += seconds;
    timed.count += 1;
    for (const { bound, key: name } of this.#bounds) {
      if (seconds <= bound) {
        timed.bucketValues[name] = (timed.bucketValues[name] ?? 0) + 1;
        break;
      }
    }
  }
}

/** Label sets of request series remembered at most (routes x methods x statuses stay far below). */
const SERIES_KEPT = 10_000;

const requestSeries = new RequestSeries(httpRequests, httpDuration);

/**
 * One answered request; `routes` comes from {@link RouteTemplates.matchAll}: one route, or one per
 * call of a tRPC batch (each call counted under its procedure, with the batch's status and time).
 */
export const observeRequest = (routes: readonly string[], method: string, status: number, seconds: number): void => {
  const labelMethod = METHODS.has(method) ? method : "OTHER";
  for (const route of routes) {
    requestSeries.observe(route, labelMethod, status, seconds);
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
