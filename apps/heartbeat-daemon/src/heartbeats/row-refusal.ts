/**
 * Whether an error of a heartbeat write says "the database refuses these values" (some row is bad:
 * bisect the batch and drop that row) rather than "the database is unavailable" (keep every row and
 * retry the whole batch later). SQLSTATE classes 22 (data exception: NUL in jsonb, out-of-range
 * number, bad encoding), 23 (integrity constraint) and 54 (program limit: an index row too big), and
 * the client-side encoding errors a value can raise (RangeError, TypeError) are row refusals;
 * connection and server errors are not.
 */
export const isRowRefusal = (error: unknown): boolean => {
  if (error instanceof RangeError || error instanceof TypeError) return true;
  const code = (error as { code?: unknown } | null)?.code;
  return (
    typeof code === "string" &&
    code.length === 5 &&
    (code.startsWith("22") || code.startsWith("23") || code.startsWith("54"))
  );
};

/** `{ code, reason }` of an error for one log line: no stack, bounded length. */
export const errorSummary = (error: unknown): { code: string | undefined; reason: string } => {
  const code = (error as { code?: unknown } | null)?.code;
  const reason = error instanceof Error ? error.message : String(error);
  return { code: typeof code === "string" ? code : undefined, reason: reason.slice(0, 300) };
};
