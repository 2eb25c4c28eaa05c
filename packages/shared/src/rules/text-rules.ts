import { z } from "zod";

/**
 * The text rule of docs/api.md "Errors": text input never holds C0 control characters
 * (U+0000-U+001F), DEL (U+007F) or a lone UTF-16 surrogate. PostgreSQL refuses NUL in `text`
 * outright, RouterOS scripts and log lines break on the others, and a lone surrogate cannot be
 * encoded as UTF-8. Tab and newline are allowed only where a field is multi-line.
 */
export const TEXT_RULE_MESSAGE = "must not contain control characters or invalid Unicode";

/** True when `value` breaks the text rule. A loop over UTF-16 units: no regex, no allocation. */
export const breaksTextRule = (value: string, options: { multiline?: boolean } = {}): boolean => {
  const multiline = options.multiline === true;
  for (let i = 0; i < value.length; i++) {
    const unit = value.charCodeAt(i);
    if (unit < 0x20) {
      if (multiline && (unit === 0x09 || unit === 0x0a)) continue;
      return true;
    }
    if (unit === 0x7f) return true;
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = value.charCodeAt(i + 1);
      if (!(next >= 0xdc00 && next <= 0xdfff)) return true;
      i++;
      continue;
    }
    if (unit >= 0xdc00 && unit <= 0xdfff) return true;
  }
  return false;
};

/** A node waiting to be checked, with the way to it (a linked path: no array copied per node). */
interface Pending {
  value: unknown;
  key: string | undefined;
  parent: Pending | undefined;
}

const pathOf = (pending: Pending | undefined): string => {
  const keys: string[] = [];
  for (let at = pending; at !== undefined; at = at.parent) if (at.key !== undefined) keys.push(at.key);
  return keys.reverse().join(".");
};

/**
 * The dotted path of the first string (key or value) inside `value` that breaks the text rule, or
 * undefined. For free-form input (metadata objects) whose shape no schema fixes. Iterative, depth
 * first in document order: no nesting, however deep, can overflow the call stack.
 */
export const findTextRuleViolation = (value: unknown, path: string[] = []): string | undefined => {
  const root: Pending = { value, key: path.length > 0 ? path.join(".") : undefined, parent: undefined };
  const stack: Pending[] = [root];
  while (stack.length > 0) {
    const at = stack.pop() as Pending;
    const current = at.value;
    if (typeof current === "string") {
      if (breaksTextRule(current)) return pathOf(at);
      continue;
    }
    if (current === null || typeof current !== "object") continue;
    if (Array.isArray(current)) {
      for (let i = current.length - 1; i >= 0; i--) stack.push({ value: current[i], key: String(i), parent: at });
      continue;
    }
    const keys = Object.keys(current);
    for (let i = keys.length - 1; i >= 0; i--) {
      const key = keys[i] as string;
      stack.push({ value: (current as Record<string, unknown>)[key], key, parent: at });
      // The key itself, met just before its value (a string at the same path).
      stack.push({ value: key, key, parent: at });
    }
  }
  return undefined;
};

/**
 * The one zod string for text input: every text field of a body, a metadata value or a heartbeat
 * is built from it (or refined with `textRule`), so the rule holds everywhere by construction.
 */
export const textRule = <T extends z.ZodType<string>>(schema: T, options: { multiline?: boolean } = {}) =>
  schema.refine((value) => !breaksTextRule(value, options), { error: TEXT_RULE_MESSAGE });

/** `z.string()` with the text rule; chain `.max()` etc. before passing, or use `text({ max })`. */
export const text = (
  options: {
    max?: number;
    min?: number;
    multiline?: boolean;
    error?: string | ((issue: { input?: unknown }) => string);
  } = {},
) => {
  let schema = z.string(options.error ? { error: options.error } : undefined);
  if (options.min !== undefined)
    schema = schema.min(options.min, {
      error: options.min === 1 ? "is required and cannot be empty" : `must be at least ${options.min} characters`,
    });
  if (options.max !== undefined)
    schema = schema.max(options.max, { error: `must be at most ${options.max} characters` });
  return textRule(schema, options);
};

/**
 * The one wording of a text field's type error (docs/api.md "Errors"): a missing field "is required",
 * a field of another type "must be a string", whatever the schema.
 */
export const stringError = (issue: { input?: unknown }): string =>
  issue.input === undefined ? "is required" : "must be a string";
