import type { DescribedError } from "./errors.ts";

/**
 * The `/api` JSend envelopes (docs/api.md "Routers", "Errors"), success and error side by side.
 * The success envelope is part of a procedure's output (its schema is `successEnvelope(...)`, which
 * the typed client and /openapi.json read, and tRPC answers carry it too), so it wraps the
 * resolver: `.query(jsend(async ({ ctx }) => data))`. The error envelope is rendered by the REST
 * transport (http/error-shapes.ts) for every error of an `/api` path.
 */
export const jsend = Object.assign(
  <TOptions, TData>(resolve: (options: TOptions) => Promise<TData>) =>
    async (options: TOptions): Promise<{ status: "success"; data: TData }> =>
      envelope({ data: await resolve(options) }),
  {
    /** A paged list: the resolver's `data` and `next_cursor` go beside `status`. */
    page:
      <TOptions, TPage extends { data: unknown; next_cursor?: string | null }>(
        resolve: (options: TOptions) => Promise<TPage>,
      ) =>
      async (options: TOptions): Promise<{ status: "success" } & TPage> =>
        envelope(await resolve(options)),
  },
);

const envelope = <T extends { data: unknown }>(body: T): { status: "success" } & T => ({ status: "success", ...body });

/** `/api/...` error body: JSend `fail` for 4xx (field errors as `data`), `error` for 5xx. */
export const jsendError = (e: DescribedError): Record<string, unknown> => {
  if (e.status >= 500) return { status: "error", message: e.message, code: e.code };
  const data = e.fields ? Object.fromEntries(Object.entries(e.fields).map(([k, v]) => [k, v.join(" ")])) : undefined;
  return { status: "fail", message: e.message, code: e.code, ...(data ? { data } : {}), ...e.extra };
};
