/** Raw rows come back with driver-specific types (PGlite and pg differ); normalize here only. */

export const toDate = (value: unknown): Date => {
  if (value instanceof Date) return value;
  if (typeof value === "number") return new Date(value);
  if (typeof value === "string") {
    // "2026-11-21 05:40:00.123+00" -> ISO that every engine parses.
    const iso = value.replace(" ", "T").replace(/([+-]\d\d)$/, "$1:00");
    return new Date(iso);
  }
  throw new TypeError(`not a timestamp: ${String(value)}`);
};

export const toNumber = (value: unknown): number => (typeof value === "number" ? value : Number(value));

/** True for PostgreSQL's unique_violation, whichever driver raised it. */
export const isUniqueViolation = (error: unknown): boolean => {
  if (typeof error !== "object" || error === null) return false;
  const e = error as { code?: unknown; name?: unknown; cause?: unknown };
  if (e.code === "23505" || e.name === "UniqueConstraintViolationException") return true;
  return e.cause !== undefined && e.cause !== error && isUniqueViolation(e.cause);
};
