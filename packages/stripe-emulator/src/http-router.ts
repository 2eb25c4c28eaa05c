// A tiny method + path-pattern router (`/v1/invoices/:id/pay`).
import type { EmulatorStore } from "./emulator-store.ts";
import type { Params } from "./request-params.ts";

export type KeyKind = "secret" | "publishable";

export interface RouteContext {
  store: EmulatorStore;
  /** Query string and form body merged, parsed with qs bracket notation. */
  params: Params;
  path: Record<string, string>;
  keyKind: KeyKind;
  /** Public base URL of the emulator as seen by the caller (for invoice_pdf etc.). */
  baseUrl: string;
}

/** A non-JSON response (hosted invoice page, PDF). Handlers otherwise return the Stripe object to send. */
export class RawResponse {
  readonly body: string | Buffer;
  readonly contentType: string;

  constructor(body: string | Buffer, contentType: string) {
    this.body = body;
    this.contentType = contentType;
  }
}

export type RouteHandler = (ctx: RouteContext) => object;

export interface RouteOptions {
  /** Accepts publishable (pk_test_) keys, like the calls Stripe.js makes. */
  publishable?: boolean;
  /** Served without any API key (hosted invoice pages). */
  public?: boolean;
}

interface Route {
  method: string;
  regex: RegExp;
  names: string[];
  handler: RouteHandler;
  options: RouteOptions;
}

export interface RouteMatch {
  handler: RouteHandler;
  path: Record<string, string>;
  options: RouteOptions;
}

export class Router {
  private readonly routes: Route[] = [];

  on(method: string, pattern: string, handler: RouteHandler, options: RouteOptions = {}): this {
    const names: string[] = [];
    const source = pattern.replace(/:([a-z_]+)/g, (_, name: string) => {
      names.push(name);
      return "([^/]+)";
    });
    this.routes.push({ method, regex: new RegExp(`^${source}/?$`), names, handler, options });
    return this;
  }

  get(pattern: string, handler: RouteHandler, options?: RouteOptions): this {
    return this.on("GET", pattern, handler, options);
  }

  post(pattern: string, handler: RouteHandler, options?: RouteOptions): this {
    return this.on("POST", pattern, handler, options);
  }

  delete(pattern: string, handler: RouteHandler, options?: RouteOptions): this {
    return this.on("DELETE", pattern, handler, options);
  }

  match(method: string, pathname: string): RouteMatch | undefined {
    for (const route of this.routes) {
      if (route.method !== method) continue;
      const m = route.regex.exec(pathname);
      if (!m) continue;
      const path: Record<string, string> = {};
      route.names.forEach((name, i) => {
        path[name] = decodeURIComponent(m[i + 1] ?? "");
      });
      return { handler: route.handler, path, options: route.options };
    }
    return undefined;
  }
}
