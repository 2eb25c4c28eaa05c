import type { AppRouter } from "../trpc/app-router.ts";
import type { ProcedureMeta } from "../trpc/init.ts";
import type { DescribedError } from "../trpc/errors.ts";

/** docs/api.md "Errors": a 429 without its own retry time tells the client to wait this long. */
export const DEFAULT_RETRY_AFTER_SECONDS = 60;

/**
 * Every procedure's meta by its dotted path, read once at start-up. A tRPC router exposes its
 * procedures as nested properties (`appRouter.routers.list`), each a function carrying its `meta`.
 */
export const procedureMetas = (router: AppRouter): Map<string, ProcedureMeta> => {
  const metas = new Map<string, ProcedureMeta>();
  const walk = (node: object, prefix: string) => {
    for (const [key, value] of Object.entries(node)) {
      // tRPC's own members start with an underscore; `createCaller` is a function without `meta`.
      if (key.startsWith("_")) continue;
      if (typeof value === "function") {
        if ("meta" in value) metas.set(`${prefix}${key}`, (value.meta as ProcedureMeta | undefined) ?? {});
      } else if (typeof value === "object" && value !== null) walk(value, `${prefix}${key}.`);
    }
  };
  walk(router, "");
  return metas;
};

/** `Retry-After` in whole seconds (at least 1) for a 429, or a 503 that knows its retry time, else nothing. */
export const retryAfterSeconds = (error: DescribedError): number | undefined => {
  if (error.status === 429) return Math.max(1, Math.ceil(error.retryAfterSeconds ?? DEFAULT_RETRY_AFTER_SECONDS));
  if (error.status === 503 && error.retryAfterSeconds !== undefined)
    return Math.max(1, Math.ceil(error.retryAfterSeconds));
  return undefined;
};

/**
 * The headers every transport adds to an answer (REST, tRPC's adapter, the fast path): `Retry-After`
 * on a 429 or a 503 of a database outage (the longest of a batch), `Cache-Control: no-store` when any procedure called is marked
 * `noStore` in its meta (docs/api.md "Authentication").
 */
export const answerHeaders = (
  metas: ReadonlyMap<string, ProcedureMeta>,
  paths: readonly (string | undefined)[] | undefined,
  errors: readonly DescribedError[],
): Record<string, string> => {
  const headers: Record<string, string> = {};
  let retry: number | undefined;
  for (const error of errors) {
    const seconds = retryAfterSeconds(error);
    if (seconds !== undefined && (retry === undefined || seconds > retry)) retry = seconds;
  }
  if (retry !== undefined) headers["retry-after"] = String(retry);
  if (paths?.some((path) => path !== undefined && metas.get(path)?.noStore === true)) {
    headers["cache-control"] = "no-store";
  }
  return headers;
};
