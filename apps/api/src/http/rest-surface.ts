import type { ProcedureMeta } from "../trpc/init.ts";

/** One REST operation: a procedure's own method and path, or one of its aliases. */
export interface RestOperation {
  procedurePath: string;
  method: string;
  path: string;
  /** The procedure's own face (`openapi.method`, `openapi.path`) this alias stands for. */
  canonical: { method: string; path: string } | undefined;
}

export type SurfaceMatch =
  | { kind: "alias"; method: string; url: string }
  | { kind: "refused"; message: string; allow: string[] }
  | { kind: "unlisted"; allow: string[] };

interface PathEntry {
  template: string;
  pattern: RegExp;
  operations: Map<string, RestOperation>;
  refused: Map<string, string>;
}

const patternOf = (template: string): RegExp =>
  new RegExp(
    `^${template
      .split("/")
      .map((part) =>
        /^\{[^}]+\}$/.test(part) ? `(?<${part.slice(1, -1)}>[^/]+)` : part.replace(/[.*+?^$()|[\]\\]/g, "\\$&"),
      )
      .join("/")}/*$`,
  );

/**
 * The REST surface as the features declare it in their procedures' meta (`openapi` plus `rest`:
 * aliases and refused methods), read by the REST adapter and by the OpenAPI builder alike, so
 * neither knows any endpoint by name (docs/api.md "Errors": unlisted methods answer 405).
 */
export class RestSurface {
  readonly #paths: PathEntry[] = [];
  /**
   * Paths without parameters whose own entry is the first to match them: found by one lookup
   * instead of trying every pattern in turn (every request asks).
   */
  readonly #exact = new Map<string, PathEntry>();

  constructor(metas: ReadonlyMap<string, ProcedureMeta>) {
    for (const [procedurePath, meta] of metas) {
      const openapi = meta.openapi;
      if (!openapi) continue;
      this.#add(openapi.path, { procedurePath, method: openapi.method, path: openapi.path, canonical: undefined });
      for (const alias of meta.rest?.aliases ?? []) {
        const path = alias.path ?? openapi.path;
        this.#add(path, {
          procedurePath,
          method: alias.method,
          path,
          canonical: { method: openapi.method, path: openapi.path },
        });
      }
      for (const refused of meta.rest?.refused ?? [])
        this.#entry(openapi.path).refused.set(refused.method, refused.message);
    }
    this.#paths.forEach((entry, index) => {
      const earlier = this.#paths.slice(0, index);
      if (!entry.template.includes("{") && !earlier.some((candidate) => candidate.pattern.test(entry.template)))
        this.#exact.set(entry.template, entry);
    });
  }

  /** Every operation, aliases included, in declaration order. */
  operations(): RestOperation[] {
    return this.#paths.flatMap((entry) => [...entry.operations.values()]);
  }

  /** Refused methods by path template, with their messages. */
  refused(): Array<{ path: string; method: string; message: string }> {
    return this.#paths.flatMap((entry) =>
      [...entry.refused].map(([method, message]) => ({ path: entry.template, method, message })),
    );
  }

  /** What a request to a known path needs before the adapter runs; undefined = pass through. */
  match(method: string, path: string, search: string): SurfaceMatch | undefined {
    const entry = this.#find(path);
    if (!entry) return undefined;
    const operation = entry.operations.get(method);
    if (operation?.canonical) {
      const groups = entry.pattern.exec(path)?.groups ?? {};
      const target = operation.canonical.path.replace(/\{([^}]+)\}/g, (_m, name: string) => groups[name] ?? "");
      return { kind: "alias", method: operation.canonical.method, url: `${target}${search}` };
    }
    if (operation) return undefined;
    const allow = [...entry.operations.keys()];
    const message = entry.refused.get(method);
    return message ? { kind: "refused", message, allow } : { kind: "unlisted", allow };
  }

  /** The operation a request reaches as itself (after alias rewriting), if any. */
  operationAt(method: string, path: string): RestOperation | undefined {
    return this.#find(path)?.operations.get(method);
  }

  #find(path: string): PathEntry | undefined {
    return this.#exact.get(path) ?? this.#paths.find((candidate) => candidate.pattern.test(path));
  }

  #entry(template: string): PathEntry {
    let entry = this.#paths.find((candidate) => candidate.template === template);
    if (!entry) {
      entry = { template, pattern: patternOf(template), operations: new Map(), refused: new Map() };
      this.#paths.push(entry);
    }
    return entry;
  }

  #add(template: string, operation: RestOperation): void {
    this.#entry(template).operations.set(operation.method, operation);
  }
}
