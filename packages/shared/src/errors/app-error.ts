/**
 * The one error type domain code throws. Transports (REST /v1, REST /api, tRPC) turn it into
 * their own wire shape from the single table below, so a code means the same status everywhere.
 */

/** Documented error codes. Each maps to exactly one HTTP status in {@link ERROR_STATUS}. */
export const ERROR_STATUS = {
  /** Body failed validation; `details` holds `{ "<dotted.field>": ["message", ...] }`. */
  validation_failed: 422,
  /** The organization has no billing account yet (docs/api.md "No-account error"). */
  no_account: 422,
  /** Two backup versions too far apart to diff within the time limit (docs/api.md "Configuration backups"). */
  diff_too_large: 422,
  /** Malformed JSON or a structurally unacceptable request (too deep, bad batch). */
  bad_request: 400,
  /** Missing, malformed, expired or wrongly signed access token. */
  unauthenticated: 401,
  /** Valid token without the scope the operation needs, or a team of another organization. */
  forbidden: 403,
  /** Unknown id, or an id of another organization/team (never 403, never a hint). */
  not_found: 404,
  /** A one-time link that was used or expired (an adoption script URL, docs/routeros.md "Adoption"). */
  gone: 410,
  /** The operation does not exist on this resource (e.g. deleting the billing account). */
  method_not_allowed: 405,
  /** The request conflicts with current state (account already exists, default card, ...). */
  conflict: 409,
  /** The organization is billed by the top of its tree, not by itself. */
  billed_by_parent: 409,
  /** Body larger than the 100 KiB limit. */
  payload_too_large: 413,
  /** A body whose content type is not JSON (docs/api.md "Errors"). */
  unsupported_media_type: 415,
  /** The subscription check refused to create a service, or a card was declined. */
  payment_required: 402,
  /** Too many requests or resources (a cap was reached). */
  rate_limited: 429,
  /** An upstream dependency (the payment processor) failed or is unreachable. */
  upstream_failed: 502,
  /** Not ready yet (database unreachable, migrations pending). */
  unavailable: 503,
  /**
   * The database cannot be reached (refused or cut connections, a server shutting down, pool
   * timeouts): an outage, not a bug. Answered with `Retry-After` (docs/api.md "Errors").
   */
  database_unavailable: 503,
  /** A finite pool the request draws from is used up (e.g. every entry-point port is taken). */
  capacity_exhausted: 503,
  /** Anything unexpected. The message shown to clients is generic. */
  internal: 500,
} as const;

export type TErrorCode = keyof typeof ERROR_STATUS;

/** Field errors: dotted field path -> messages. */
export type TFieldErrors = Record<string, string[]>;

export interface AppErrorOptions {
  /** Field errors for `validation_failed`. */
  fields?: TFieldErrors;
  /** Extra machine-readable keys added to the error body (never secrets). */
  extra?: Record<string, unknown>;
  cause?: unknown;
  /**
   * Seconds after which a retry may succeed. Every transport sends it as `Retry-After` (whole
   * seconds); a 429 without it gets a default there (docs/api.md "Authentication": every 429
   * carries `Retry-After`).
   */
  retryAfterSeconds?: number;
}

export class AppError extends Error {
  readonly code: TErrorCode;
  readonly status: number;
  readonly fields: TFieldErrors | undefined;
  readonly extra: Record<string, unknown> | undefined;
  readonly retryAfterSeconds: number | undefined;

  constructor(code: TErrorCode, message: string, options: AppErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "AppError";
    this.code = code;
    this.status = ERROR_STATUS[code];
    this.fields = options.fields;
    this.extra = options.extra;
    this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

export const isAppError = (error: unknown): error is AppError => error instanceof AppError;

/** Message of the API doc's no-account error, shared by every endpoint that needs an account. */
export const NO_ACCOUNT_MESSAGE =
  "This organization has no billing account yet. Create one first with POST /v1/account.";

export const noAccountError = (documentationUrl: string): AppError =>
  new AppError("no_account", NO_ACCOUNT_MESSAGE, {
    extra: { documentation_url: documentationUrl },
  });
