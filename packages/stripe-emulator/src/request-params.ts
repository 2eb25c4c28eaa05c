// Typed accessors over qs-parsed (bracket notation) Stripe request parameters.
import { invalidParam, missingParam } from "./stripe-errors.ts";
import type { Address, Metadata } from "./stripe-types.ts";

export type Params = { [key: string]: unknown };

const isRecord = (v: unknown): v is Params => typeof v === "object" && v !== null && !Array.isArray(v);

/** Nested object param (`card[number]` → obj(p, "card")); undefined when absent. */
export function obj(p: Params, key: string): Params | undefined {
  const v = p[key];
  if (v === undefined || v === "") return undefined;
  if (isRecord(v)) return v;
  throw invalidParam(key, `Invalid object`);
}

/** Array param (`items[0][price]`); qs yields an array, or an object with numeric keys past its array limit. */
export function list(p: Params, key: string): unknown[] | undefined {
  const v = p[key];
  if (v === undefined || v === "") return undefined;
  if (Array.isArray(v)) return v;
  if (isRecord(v))
    return Object.keys(v)
      .sort((a, b) => Number(a) - Number(b))
      .map((k) => v[k]);
  throw invalidParam(key, `Invalid array`);
}

export function has(p: Params, key: string): boolean {
  return p[key] !== undefined;
}

/** String param; `""` means "unset" in Stripe and is returned as null. */
export function str(p: Params, key: string, label = key): string | null | undefined {
  const v = p[key];
  if (v === undefined) return undefined;
  if (typeof v !== "string") throw invalidParam(label, `Invalid string: ${label} must be a string`);
  return v === "" ? null : v;
}

export function reqStr(p: Params, key: string, label = key): string {
  const v = str(p, key, label);
  if (v === undefined || v === null) throw missingParam(label);
  return v;
}

export function int(p: Params, key: string, label = key): number | undefined {
  const v = str(p, key, label);
  if (v === undefined || v === null) return undefined;
  if (!/^-?\d+$/.test(v)) throw invalidParam(label, `Invalid integer: ${v}`, "parameter_invalid_integer");
  return Number(v);
}

export function bool(p: Params, key: string, label = key): boolean | undefined {
  const v = str(p, key, label);
  if (v === undefined || v === null) return undefined;
  if (v !== "true" && v !== "false") throw invalidParam(label, `Invalid boolean: ${v}`);
  return v === "true";
}

export function oneOf<T extends string>(p: Params, key: string, values: readonly T[], label = key): T | undefined {
  const v = str(p, key, label);
  if (v === undefined || v === null) return undefined;
  if (!(values as readonly string[]).includes(v)) {
    throw invalidParam(label, `Invalid ${label}: must be one of ${values.join(", ")}`);
  }
  return v as T;
}

export function currency(p: Params, key = "currency"): string | undefined {
  const v = str(p, key);
  if (v === undefined || v === null) return undefined;
  if (!/^[a-zA-Z]{3}$/.test(v)) throw invalidParam(key, `Invalid currency: ${v}`);
  return v.toLowerCase();
}

/** Applies `metadata[...]` to an existing map: values merge, `""` deletes a key, `metadata=""` clears all. */
export function applyMetadata(p: Params, target: Metadata = {}): Metadata {
  const raw = p.metadata;
  if (raw === undefined) return target;
  if (raw === "") return {};
  if (!isRecord(raw)) throw invalidParam("metadata", "Invalid metadata: must be a hash");
  const next = { ...target };
  for (const [k, v] of Object.entries(raw)) {
    if (typeof v !== "string") throw invalidParam(`metadata[${k}]`, "Invalid metadata value: must be a string");
    if (v === "") delete next[k];
    else next[k] = v;
  }
  return next;
}

export function address(p: Params, key: string): Address | null | undefined {
  if (p[key] === "") return null;
  const a = obj(p, key);
  if (!a) return undefined;
  const s = (k: string) => str(a, k, `${key}[${k}]`) ?? null;
  return {
    city: s("city"),
    country: s("country"),
    line1: s("line1"),
    line2: s("line2"),
    postal_code: s("postal_code"),
    state: s("state"),
  };
}
