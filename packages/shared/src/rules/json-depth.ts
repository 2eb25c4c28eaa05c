/**
 * docs/api.md "Errors": JSON nested deeper than this many levels (objects and arrays together) is
 * refused like a bad field, in every body, frame and heartbeat. The root object is level 1.
 */
export const MAX_JSON_DEPTH = 32;

/** The message of a refused nesting, under the field that holds it. */
export const JSON_DEPTH_MESSAGE = `must not nest objects and arrays deeper than ${MAX_JSON_DEPTH} levels`;

/**
 * Whether the JSON `text` holds at most `max` opening brackets (`{` or `[`, in strings too): then it
 * cannot nest deeper than `max` levels, each level opening one, and its parsed value need not be
 * walked. Two memchr-like scans: a heartbeat's health parts (a dozen objects) skip the walk.
 */
export const opensAtMost = (text: string, max: number): boolean => {
  let count = 0;
  for (let i = text.indexOf("{"); i !== -1 && count <= max; i = text.indexOf("{", i + 1)) count++;
  for (let i = text.indexOf("["); i !== -1 && count <= max; i = text.indexOf("[", i + 1)) count++;
  return count <= max;
};

/**
 * The top-level field under which a parsed JSON value nests deeper than `max` levels: `[key]`, or
 * `[]` when the root itself is the culprit (a deep array as the whole body); undefined when it does
 * not. When several fields do, the last one names the refusal. The walk recurses, but never
 * deeper than `max + 1` calls whatever the input (it stops at the first level past `max`), so no
 * input can overflow the call stack; and it allocates nothing (a heartbeat's health parts are
 * objects in arrays, walked on every heartbeat).
 */
export const findDepthViolation = (value: unknown, max = MAX_JSON_DEPTH): string[] | undefined => {
  if (value === null || typeof value !== "object") return undefined;
  if (max < 1) return [];
  if (Array.isArray(value)) {
    for (const child of value) if (exceeds(child, 2, max)) return [];
    return undefined;
  }
  let found: string | undefined;
  // for...in, not Object.keys: no array per call on the heartbeat's path (parsed JSON has no inherited keys).
  for (const key in value) if (exceeds((value as Record<string, unknown>)[key], 2, max)) found = key;
  return found === undefined ? undefined : [found];
};

/** Whether `node`, at `depth` (the root is 1), or anything inside it lies deeper than `max`. */
const exceeds = (node: unknown, depth: number, max: number): boolean => {
  if (node === null || typeof node !== "object") return false;
  if (depth > max) return true;
  if (Array.isArray(node)) {
    for (let i = 0; i < node.length; i++) if (exceeds(node[i], depth + 1, max)) return true;
    return false;
  }
  for (const key in node) if (exceeds((node as Record<string, unknown>)[key], depth + 1, max)) return true;
  return false;
};
