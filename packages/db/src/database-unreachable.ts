/**
 * Whether an error means the database cannot be reached, as opposed to a statement that failed
 * (docs/api.md "Errors": such requests answer 503 with `Retry-After`, never 500). The driver's
 * error may be wrapped (MikroORM's DriverException, a `cause` chain), so the whole chain is read.
 */
export const isDatabaseUnreachable = (error: unknown): boolean => {
  let current: unknown = error;
  for (let depth = 0; depth < 8 && typeof current === "object" && current !== null; depth++) {
    const { code, message } = current as { code?: unknown; message?: unknown };
    if (typeof code === "string" && (NETWORK_CODES.has(code) || SQLSTATES.has(code) || code.startsWith("08")))
      return true;
    if (typeof message === "string" && UNREACHABLE_MESSAGES.some((pattern) => pattern.test(message))) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
};

/** Sockets that could not be opened or were cut. */
const NETWORK_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
]);

/**
 * SQLSTATEs of a server going away or not taking sessions: admin/crash shutdown (57P01, 57P02),
 * starting up or shutting down (57P03), too many connections (53300). Class 08 (connection
 * exceptions) is matched by its prefix.
 */
const SQLSTATES = new Set(["57P01", "57P02", "57P03", "53300"]);

/** The pg driver's and pool's own errors carry no code, only these messages; PGlite once closed. */
const UNREACHABLE_MESSAGES = [
  /^Connection terminated/,
  /timeout exceeded when trying to connect/,
  /Client has encountered a connection error and is not queryable/,
  /^Connection ended unexpectedly/,
  /PGlite is closed/,
];
