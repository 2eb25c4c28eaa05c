import { initTRPC, TRPCError } from "@trpc/server";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { invokeProcedure } from "./invoke.ts";

/** invokeProcedure must give what tRPC's own caller gives: the parsed output, or the same error. */
const t = initTRPC.context<{ user: string }>().create();
const router = t.router({
  // The output schema strips a key and transforms another: the caller sees the parsed value.
  parsed: t.procedure
    .input(z.object({ n: z.number() }))
    .output(z.object({ n: z.number().transform((n) => n * 2) }))
    .query(({ input, ctx }) => ({ n: input.n, secret: ctx.user })),
  // An answer its own output schema refuses.
  refused: t.procedure.output(z.object({ n: z.number() })).query(() => ({ n: "one" }) as unknown as { n: number }),
});
const caller = t.createCallerFactory(router)({ user: "u1" });
const invoke = (path: keyof typeof router._def.procedures, input?: unknown) =>
  invokeProcedure(router._def.procedures[path], { ctx: { user: "u1" }, path, type: "query", input });

const failure = async (work: () => Promise<unknown>) => {
  const error = await work().then(
    () => undefined,
    (cause: unknown) => cause,
  );
  expect(error).toBeInstanceOf(TRPCError);
  const { code, message } = error as TRPCError;
  return { code, message, cause: (error as TRPCError).cause?.constructor.name };
};

describe("invokeProcedure", () => {
  it("answers the output as its schema parsed it", async () => {
    expect(await invoke("parsed", { n: 2 })).toEqual({ n: 4 });
    expect(await invoke("parsed", { n: 2 })).toEqual(await caller.parsed({ n: 2 }));
  });

  it("refuses an output its schema refuses with tRPC's own error", async () => {
    const ours = await failure(() => invoke("refused"));
    expect(ours).toEqual(await failure(() => caller.refused()));
    expect(ours).toMatchObject({ code: "INTERNAL_SERVER_ERROR", message: "Output validation failed" });
  });

  it("refuses input its schema refuses as tRPC does", async () => {
    expect(await failure(() => invoke("parsed", { n: "x" }))).toEqual(
      await failure(() => caller.parsed({ n: "x" as unknown as number })),
    );
  });
});
