import { AppError } from "@fleet/shared";
import type { Request, RequestHandler, Response } from "express";
import { ipKeyGenerator, MemoryStore, rateLimit, type Store } from "express-rate-limit";

/** docs/api.md "Authentication": limits count requests over one minute per key. */
export const RATE_LIMIT_WINDOW_MS = 60_000;
/** docs/api.md "Authentication": dev-login answers at most this many requests per minute per address. */
export const DEV_LOGIN_PER_MINUTE = 10;

const KEY = Symbol("rateLimitKey");
type Keyed = Request & { [KEY]?: string };

export interface RateLimiterOptions {
  limit: number;
  /** What is counted, in the 429 message ("access token", "address"). */
  subject: string;
  /** Shared counts for many API processes later (a PostgreSQL store); in-memory by default. */
  store?: Store;
}

/**
 * express-rate-limit, keyed by a value only a procedure knows (the verified credential), so it
 * runs inside the procedure chain and covers REST and tRPC alike. Over the limit it throws
 * `rate_limited` with the seconds until the key's window ends; every transport renders that as
 * `Retry-After` in its own error shape (docs/api.md "Errors").
 */
export class RateLimiter {
  readonly #middleware: RequestHandler;
  readonly #store: Store;

  constructor(options: RateLimiterOptions) {
    this.#store = options.store ?? new MemoryStore();
    this.#middleware = rateLimit({
      windowMs: RATE_LIMIT_WINDOW_MS,
      limit: options.limit,
      store: this.#store,
      keyGenerator: (req) => (req as Keyed)[KEY] ?? "",
      standardHeaders: "draft-8",
      legacyHeaders: false,
      // The key is ours, not the client address: the library's address checks do not apply.
      validate: false,
      handler: (req, _res, next) => {
        const info = (req as Request & { rateLimit?: { resetTime?: Date } }).rateLimit;
        const reset = info?.resetTime?.getTime();
        const seconds = reset ? Math.max(1, Math.ceil((reset - Date.now()) / 1000)) : RATE_LIMIT_WINDOW_MS / 1000;
        next(
          new AppError(
            "rate_limited",
            `Too many requests for this ${options.subject}: at most ${options.limit} per minute. Retry in ${seconds} s.`,
            { retryAfterSeconds: seconds },
          ),
        );
      },
    });
  }

  /** Counts one request of `key`; rejects with `rate_limited` (429) over the limit. */
  hit(req: Request, res: Response, key: string): Promise<void> {
    (req as Keyed)[KEY] = key;
    return new Promise((resolve, reject) => {
      void this.#middleware(req, res, (error?: unknown) => (error ? reject(error) : resolve()));
    });
  }

  close(): void {
    void this.#store.shutdown?.();
  }
}

/** A source address as a key: IPv6 clients share their /56, as one host usually holds many. */
export const addressKey = (ip: string | undefined): string => (ip ? ipKeyGenerator(ip) : "unknown");
