import { type AnyTRPCProcedure, getTRPCErrorFromUnknown, TRPCError } from "@trpc/server";
import { getParseFn } from "@trpc/server/unstable-core-do-not-import";

/** One call of a query or mutation, as the two HTTP fast paths make it. */
export interface ProcedureCall {
  ctx: object;
  path: string;
  type: "query" | "mutation";
  input: unknown;
}

type Result = { ok: true; data: unknown } | { ok: false; error: TRPCError };
interface NextOptions {
  ctx?: object;
  input?: unknown;
  getRawInput?: () => Promise<unknown>;
}
interface StepOptions {
  ctx: object;
  type: ProcedureCall["type"];
  path: string;
  input: unknown;
  getRawInput: () => Promise<unknown>;
  signal: undefined;
  batchIndex: number;
}
type Middleware = ((
  opts: StepOptions & { meta: unknown; next: (next?: NextOptions) => Promise<Result> },
) => Promise<Result>) & { _type?: string };
interface ProcedureDef {
  middlewares: Middleware[];
  meta: unknown;
  /** The schemas of the `.input()` calls, in order, which tRPC's input middlewares parse with. */
  inputs?: unknown[];
  /** The schema of the last `.output()`, which tRPC's output middleware parses with. */
  output?: unknown;
}

/**
 * tRPC's output middleware (`createOutputMiddleware`) with a native spread: tRPC's copies the
 * result with the same transpiled helper, the largest cost of a call left after the options. Not
 * an async function: a parser that answers at once (zod's sync parse, which tRPC's `getParseFn`
 * tries first) costs no await; one that answers a promise is waited for.
 */
const outputMiddleware = (parse: (value: unknown) => unknown): Middleware => {
  const refused = (cause: unknown) => {
    throw new TRPCError({ message: "Output validation failed", code: "INTERNAL_SERVER_ERROR", cause });
  };
  const middleware: Middleware = ({ next }) =>
    next().then((result) => {
      if (!result.ok) return result;
      let data: unknown;
      try {
        data = parse(result.data);
      } catch (cause) {
        return refused(cause);
      }
      if (data instanceof Promise) return data.then((parsed) => ({ ...result, data: parsed }), refused);
      return { ...result, data };
    });
  middleware._type = "output";
  return middleware;
};

const isObject = (value: unknown): value is Record<string, unknown> =>
  !!value && !Array.isArray(value) && typeof value === "object";

/**
 * tRPC's input middleware (`createInputMiddleware`), likewise without an await for a parser that
 * answers at once: the raw input, parsed (a refusal is tRPC's BAD_REQUEST carrying the parser's
 * error), merged over the input of an earlier step when both are objects.
 */
const inputMiddleware = (parse: (value: unknown) => unknown): Middleware => {
  const refused = (cause: unknown): never => {
    throw new TRPCError({ code: "BAD_REQUEST", cause });
  };
  const middleware: Middleware = (opts) =>
    opts.getRawInput().then((raw) => {
      const proceed = (parsed: unknown) =>
        opts.next({ input: isObject(opts.input) && isObject(parsed) ? { ...opts.input, ...parsed } : parsed });
      let parsed: unknown;
      try {
        parsed = parse(raw);
      } catch (cause) {
        return refused(cause);
      }
      return parsed instanceof Promise ? parsed.then(proceed, refused) : proceed(parsed);
    });
  middleware._type = "input";
  return middleware;
};

const chains = new WeakMap<ProcedureDef, Middleware[]>();

/**
 * A procedure's middlewares as this module runs them, made once per procedure: tRPC's own, with
 * its input and output middlewares replaced by the ones above, parsing with the def's `inputs` and
 * `output` (should a chain ever hold middlewares of a kind that cannot be told apart, tRPC's own
 * are kept for that kind).
 */
const chainOf = (def: ProcedureDef): Middleware[] => {
  let chain = chains.get(def);
  if (!chain) {
    const outputs = def.middlewares.filter((middleware) => middleware._type === "output");
    const output =
      outputs.length === 1 && def.output !== undefined ? outputMiddleware(getParseFn(def.output as never)) : undefined;
    // tRPC adds one input middleware per `.input()`, in the order of `inputs`.
    const inputs = def.middlewares.filter((middleware) => middleware._type === "input");
    const schemas = def.inputs ?? [];
    const ownInputs =
      inputs.length === schemas.length
        ? schemas.map((schema) => inputMiddleware(getParseFn(schema as never)))
        : undefined;
    let nextInput = 0;
    chain = def.middlewares.map((middleware) => {
      if (output && middleware._type === "output") return output;
      if (ownInputs && middleware._type === "input") return ownInputs[nextInput++] as Middleware;
      return middleware;
    });
    chains.set(def, chain);
  }
  return chain;
};

/**
 * Calls a procedure as `procedure(opts)` does (tRPC's `callRecursive`: each middleware gets the
 * options, `next` merges the context and input it is given), with the same middlewares (tRPC's own
 * error formatter, input and output parsers, ours) and the same result or thrown TRPCError. The one
 * difference is cost: tRPC copies the options at every step with a transpiled object-spread helper
 * that defines each property one by one, which was the largest single cost of a request in the
 * profile (`npm run bench`); native spreads do the same copy. tRPC is pinned exactly, and
 * `trpc-fast-path.test.ts` compares answers made this way with tRPC's own adapter.
 */
export const invokeProcedure = async (procedure: AnyTRPCProcedure, call: ProcedureCall): Promise<unknown> => {
  const def = procedure._def as unknown as ProcedureDef;
  const input = call.input;
  const result = await step(chainOf(def), def.meta, 0, {
    ctx: call.ctx,
    type: call.type,
    path: call.path,
    input: undefined,
    getRawInput: async () => input,
    signal: undefined,
    batchIndex: 0,
  });
  if (!result) {
    throw new TRPCError({
      code: "INTERNAL_SERVER_ERROR",
      message: "No result from middlewares - did you forget to `return next()`?",
    });
  }
  if (!result.ok) throw result.error;
  return result.data;
};

/** A middleware's throw or rejection as tRPC's `callRecursive` turns it into a result. */
const failed = (cause: unknown): Result => ({ ok: false, error: getTRPCErrorFromUnknown(cause) });

// Not an async function: the middleware's promise is handed on with a rejection handler, which
// costs one promise reaction instead of an async frame suspended and resumed at every step.
const step = (chain: Middleware[], meta: unknown, index: number, opts: StepOptions): Promise<Result> => {
  let result: Promise<Result>;
  try {
    const middleware = chain[index] as Middleware;
    result = middleware({
      ...opts,
      meta,
      next: (next) =>
        step(chain, meta, index + 1, {
          ...opts,
          ctx: next?.ctx ? { ...opts.ctx, ...next.ctx } : opts.ctx,
          input: next && "input" in next ? next.input : opts.input,
          getRawInput: next?.getRawInput ?? opts.getRawInput,
        }),
    });
  } catch (cause) {
    return Promise.resolve(failed(cause));
  }
  return Promise.resolve(result).then(undefined, failed);
};

/**
 * A router's procedures by dotted path, typed as procedures: tRPC types `_def.procedures` as its
 * router record (nested routers and procedures alike), while a built router's record is flat.
 */
export const proceduresOf = (router: { _def: { procedures: object } }): Record<string, AnyTRPCProcedure> =>
  router._def.procedures as Record<string, AnyTRPCProcedure>;
