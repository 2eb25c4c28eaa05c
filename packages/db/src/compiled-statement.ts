import type { CompiledQuery, Compilable, Kysely } from "kysely";
import type { Query, Schema } from "./database.ts";

type Value = string | number;

/**
 * A typed statement built and compiled once, then run with each call's values on the handle it is
 * given. On a read every request makes, building the statement and the entities' plugin walking it
 * cost more CPU than the statement itself (`npm run bench`); compiled once, the plugin still
 * converts each result as the entities declare. `build` gets a placeholder for each value and must
 * use each as a whole bound value (a `where` operand), never in SQL text.
 */
export const compiledStatement = <V extends readonly Value[], R>(
  build: (kysely: Kysely<Schema>, ...values: V) => Compilable<R>,
): ((query: Query, ...values: V) => Promise<R[]>) => {
  let compiled: { statement: CompiledQuery<R>; positions: readonly number[] } | undefined;
  const compile = (kysely: Kysely<Schema>, count: number) => {
    const tokens = Array.from({ length: count }, (_, i) => `\u0000value-${i}\u0000`);
    const statement = build(kysely, ...(tokens as readonly Value[] as V)).compile();
    // Where each parameter comes from: a value of the call, or -1 for a constant of the statement (a limit).
    const positions = statement.parameters.map((parameter) => tokens.indexOf(parameter as string));
    if (tokens.some((_, i) => !positions.includes(i))) {
      throw new Error("compiledStatement: each value must be a bound parameter of the statement");
    }
    return { statement, positions };
  };
  return async (query, ...values) => {
    compiled ??= compile(query.kysely, values.length);
    const { statement, positions } = compiled;
    // The same queryId each run: the plugin finds the entities it noted when the statement was compiled.
    const result = await query.kysely.executeQuery<R>({
      ...statement,
      parameters: statement.parameters.map((constant, k) => {
        const i = positions[k] ?? -1;
        return i === -1 ? constant : values[i];
      }),
    });
    return result.rows;
  };
};
