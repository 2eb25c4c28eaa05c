// `expand[]=customer`, `expand[]=data.customer`, `expand[]=latest_invoice`: replaces ids with stored objects.
// Paths that don't resolve are ignored (no error), so expand is at worst a no-op.
import type { EmulatorStore } from "./emulator-store.ts";

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

function walk(store: EmulatorStore, node: unknown, segments: string[]): unknown {
  if (Array.isArray(node)) return node.map((n) => walk(store, n, segments));
  const [head, ...rest] = segments;
  if (head === undefined || !isRecord(node) || !(head in node)) return node;
  let value = node[head];
  if (typeof value === "string") {
    const found = store.lookup(value);
    if (found) value = structuredClone(found);
  }
  node[head] = walk(store, value, rest);
  return node;
}

/** Returns a copy of `body` with the requested paths expanded; the stored objects are never mutated. */
export function expandFields(store: EmulatorStore, body: object, paths: string[]): object {
  if (paths.length === 0) return body;
  let copy: unknown = structuredClone(body);
  for (const path of paths) copy = walk(store, copy, path.split("."));
  return copy as object;
}
