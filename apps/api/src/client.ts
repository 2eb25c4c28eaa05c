import {
  createTRPCClient,
  httpBatchLink,
  httpLink,
  httpSubscriptionLink,
  splitLink,
  type TRPCClient,
} from "@trpc/client";
import type { AppRouter } from "./trpc/app-router.ts";

export type { AppRouter } from "./trpc/app-router.ts";

export interface ClientOptions {
  /** Base URL of the API, e.g. http://localhost:3000 (tRPC lives at /trpc). */
  url: string;
  /** Access token, or a function returning the current one (called per request). */
  token?: string | (() => string | undefined);
  /** Batch concurrent calls into one request (default true; the server allows 10 per batch). */
  batch?: boolean;
  fetch?: typeof fetch;
  /**
   * EventSource for subscriptions (`routers.onStatus`, over SSE); defaults to the runtime's (every
   * browser has one). Node has none without a flag: pass a maintained one there (the tests pass the
   * `eventsource` package's). The token travels in tRPC's connectionParams, since EventSource has
   * no headers.
   */
  EventSource?: SubscriptionEventSource;
}

/** What tRPC's SSE link accepts: the runtime's EventSource or a compatible one (`eventsource`). */
type SubscriptionEventSource = NonNullable<Parameters<typeof httpSubscriptionLink>[0]["EventSource"]>;

/** The typed client frontends use: every procedure with its zod-derived input and output types. */
export const createClient = (options: ClientOptions): TRPCClient<AppRouter> => {
  const headers = () => {
    const token = typeof options.token === "function" ? options.token() : options.token;
    return token ? { authorization: `Bearer ${token}` } : {};
  };
  const url = `${options.url.replace(/\/+$/, "")}/trpc`;
  const link =
    options.batch === false
      ? httpLink({ url, headers, ...(options.fetch ? { fetch: options.fetch } : {}) })
      : httpBatchLink({ url, headers, maxItems: 10, ...(options.fetch ? { fetch: options.fetch } : {}) });
  const subscriptions = httpSubscriptionLink({
    url,
    EventSource: options.EventSource ?? globalThis.EventSource,
    connectionParams: () => headers(),
  });
  return createTRPCClient<AppRouter>({
    links: [splitLink({ condition: (op) => op.type === "subscription", true: subscriptions, false: link })],
  });
};
