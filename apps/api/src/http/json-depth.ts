import { AppError, findDepthViolation, JSON_DEPTH_MESSAGE, MAX_JSON_DEPTH } from "@fleet/shared";

/**
 * docs/api.md "Errors": a body (or a tRPC query's `input`) nested deeper than 32 levels, as the
 * 422 that names its field, or undefined. A tRPC batch (`{"0": input, ...}`) is one level more
 * deep than its inputs, and the field is named inside the input, as a procedure would name it.
 */
export const depthRefusal = (value: unknown, batch: boolean): AppError | undefined => {
  let deep: string[] | undefined;
  if (batch && value !== null && typeof value === "object" && !Array.isArray(value)) {
    for (const input of Object.values(value)) {
      deep = findDepthViolation(input, MAX_JSON_DEPTH - 1);
      if (deep) break;
    }
  } else {
    deep = findDepthViolation(value);
  }
  if (deep === undefined) return undefined;
  const field = deep[0] ?? "body";
  return new AppError("validation_failed", `The given data was invalid: ${field} ${JSON_DEPTH_MESSAGE}.`, {
    fields: { [field]: [JSON_DEPTH_MESSAGE] },
  });
};
