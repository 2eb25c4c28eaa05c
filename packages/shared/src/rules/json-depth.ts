/**
 * docs/api.md "Errors": JSON nested deeper than this many levels (objects and arrays together) is
 * refused like a bad field, in every body, frame and heartbeat. The root object is level 1.
 */
export const MAX_JSON_DEPTH = 32;

/** The message of a refused nesting, under the field that holds it. */
export const JSON_DEPTH_MESSAGE = `must not nest objects and arrays deeper than ${MAX_JSON_DEPTH} levels`;

/**
 * The top-level field under which a parsed JSON value nests deeper than `max` levels: `[key]`, or
 * `[]` when the root itself is the culprit (a deep array as the whole body); undefined when it does
 * not. Iterative (an explicit stack, no recursion), so no input can overflow the call stack, and a
 * flat object (a plain heartbeat) costs one pass over its own values.
 */
export const findDepthViolation = (value: unknown, max = MAX_JSON_DEPTH): string[] | undefined => {
  if (value === null || typeof value !== "object") return undefined;
  if (max < 1) return [];
  // Parallel stacks of (node, depth, top-level key): no tuple per node.
  const nodes: object[] = [];
  const depths: number[] = [];
  const tops: Array<string | undefined> = [];
  const rootIsArray = Array.isArray(value);
  // for...in, not Object.keys: no array per call on the heartbeat's path (parsed JSON has no inherited keys).
  for (const key in value) {
    const child = (value as Record<string, unknown>)[key];
    if (child !== null && typeof child === "object") {
      nodes.push(child);
      depths.push(2);
      tops.push(rootIsArray ? undefined : key);
    }
  }
  while (nodes.length > 0) {
    const node = nodes.pop() as object;
    const depth = depths.pop() as number;
    const top = tops.pop();
    if (depth > max) return top === undefined ? [] : [top];
    if (Array.isArray(node)) {
      for (const child of node) {
        if (child !== null && typeof child === "object") {
          nodes.push(child);
          depths.push(depth + 1);
          tops.push(top);
        }
      }
    } else {
      for (const key in node) {
        const child = (node as Record<string, unknown>)[key];
        if (child !== null && typeof child === "object") {
          nodes.push(child);
          depths.push(depth + 1);
          tops.push(top);
        }
      }
    }
  }
  return undefined;
};
