import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { appRouter } from "../trpc/app-router.ts";

/**
 * trpc-to-openapi switches every bare number, boolean, bigint or date schema of an operation's input
 * object (nested objects too) to coercion, on the shared schema: over REST, and then over tRPC too, a
 * body's `"false"` would read as true and `"60"` as 60. A body field must be a pipe (or inside one)
 * so that only JSON's own types are accepted (docs/api.md "Errors"); query strings are text and
 * are meant to be coerced.
 */
const WRAPPERS = new Set(["optional", "nullable", "default", "prefault", "readonly", "catch", "nonoptional"]);

const coercible = (schema: z.ZodType, path: string, found: string[]): void => {
  let current = schema as unknown as { _zod: { def: { type: string; innerType?: unknown; shape?: object } } };
  while (WRAPPERS.has(current._zod.def.type)) current = current._zod.def.innerType as typeof current;
  const { type, shape } = current._zod.def;
  if (["number", "boolean", "bigint", "date"].includes(type)) found.push(`${path} (${type})`);
  if (type === "object" && shape)
    for (const [key, value] of Object.entries(shape)) coercible(value, path ? `${path}.${key}` : key, found);
};

describe("REST bodies", () => {
  it("hold no field trpc-to-openapi would coerce", () => {
    const found: string[] = [];
    for (const [name, procedure] of Object.entries(appRouter._def.procedures)) {
      const def = (procedure as unknown as { _def: { meta?: { openapi?: { method: string } }; inputs: z.ZodType[] } })
        ._def;
      const method = def.meta?.openapi?.method;
      if (method === undefined || method === "GET" || method === "DELETE") continue;
      for (const input of def.inputs) coercible(input, `${name}:`, found);
    }
    expect(found).toEqual([]);
  });
});
