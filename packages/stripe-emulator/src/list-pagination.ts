// Stripe list objects: newest first, `limit` (1..100, default 10), `starting_after` / `ending_before` cursors.
import { int, str } from "./request-params.ts";
import type { Params } from "./request-params.ts";
import { invalidParam, noSuch } from "./stripe-errors.ts";
import type { ListObject } from "./stripe-types.ts";

/** `items` must be in insertion order; ties on `created` are broken newest-inserted first. */
export function paginate<T extends { id: string }>(
  items: Iterable<T>,
  params: Params,
  url: string,
  resource: string,
  createdOf: (item: T) => number = (item) => {
    const created: unknown = (item as { created?: unknown }).created;
    return typeof created === "number" ? created : 0;
  },
): ListObject<T> {
  const limit = int(params, "limit") ?? 10;
  if (limit < 1 || limit > 100) throw invalidParam("limit", "Invalid limit: must be between 1 and 100");
  const sorted = [...items].reverse().sort((a, b) => createdOf(b) - createdOf(a));
  const after = str(params, "starting_after");
  const before = str(params, "ending_before");
  const indexOf = (id: string, param: string): number => {
    const i = sorted.findIndex((x) => x.id === id);
    if (i < 0) throw noSuch(resource, id, param);
    return i;
  };
  if (before) {
    const end = indexOf(before, "ending_before");
    const start = Math.max(0, end - limit);
    return { object: "list", data: sorted.slice(start, end), has_more: start > 0, url };
  }
  const start = after ? indexOf(after, "starting_after") + 1 : 0;
  const data = sorted.slice(start, start + limit);
  return { object: "list", data, has_more: start + limit < sorted.length, url };
}

export function listOf<T>(data: T[], url: string): ListObject<T> {
  return { object: "list", data, has_more: false, url };
}
