import { AsyncLocalStorage } from "node:async_hooks";

/**
 * The id of the request being served, carried through every async step of it (docs/operations.md
 * "Metrics and probes"): the API puts it in `X-Request-Id`, in error bodies as `request_id`, and in
 * every log line written while the request runs (pino's `mixin` reads it, so loggers created
 * before the request, in services, carry it too).
 */
const storage = new AsyncLocalStorage<{ requestId: string }>();

/** An incoming id is kept when it is 1-128 visible characters of this set; anything else is replaced. */
const VALID_REQUEST_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

/** The incoming `X-Request-Id` when valid, else a fresh UUID. */
export const requestIdFrom = (header: string | string[] | undefined): string => {
  const value = Array.isArray(header) ? header[0] : header;
  return value !== undefined && VALID_REQUEST_ID.test(value) ? value : crypto.randomUUID();
};

/** Runs `work` (and everything it starts) under `requestId`. */
export const runWithRequestId = <T>(requestId: string, work: () => T): T => storage.run({ requestId }, work);

/** The id of the request this code runs for, or undefined outside a request. */
export const currentRequestId = (): string | undefined => storage.getStore()?.requestId;

/** pino `mixin`: adds `request_id` to every line logged inside a request. */
export const requestLogMixin = (): Record<string, unknown> => {
  const requestId = storage.getStore()?.requestId;
  return requestId === undefined ? {} : { request_id: requestId };
};
