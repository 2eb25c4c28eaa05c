import { SYSTEM_ORIGIN } from "@fleet/db";
import { createTestDatabase, databaseFingerprint, type TestDatabase } from "@fleet/db/testing";
import { mintApiKey, storeApiKey } from "../features/api-keys/api-keys.service.ts";
import pino, { type Logger } from "pino";
import type { Clock } from "@fleet/shared";
import { eventually, OffsetClock } from "@fleet/shared/testing";
import { type ApiConfig, loadApiConfig } from "../config.ts";
import { type ApiOverrides, composeApi, type RunningApi } from "../start-api.ts";
import { type StripeEmulator, startStripeEmulator } from "@fleet/stripe-emulator";

export interface ApiHarness {
  api: RunningApi;
  /** The API's built-in Stripe emulator (undefined when the env configures a processor): tests wait for its webhook deliveries. */
  stripeEmulator: StripeEmulator | undefined;
  db: TestDatabase;
  config: ApiConfig;
  /** The API's wall clock, real time plus `offsetMs` (tests move it to expire tokens). */
  clock: OffsetClock;
  /** Fetch against the API with JSON defaults. */
  request(
    method: string,
    path: string,
    options?: { token?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> },
  ): Promise<{ status: number; body: any; headers: Headers }>;
  /**
   * A request that must be refused and change nothing: the same request, but it throws when any
   * application row differs afterwards (docs/contributing.md "Add a test").
   */
  refused(
    method: string,
    path: string,
    options?: Parameters<ApiHarness["request"]>[2],
  ): Promise<{ status: number; body: any; headers: Headers }>;
  login(
    email?: string,
    extra?: { scope?: string; timezone?: string },
  ): Promise<{ token: string; userId: string; organizationId: string; teamId: string }>;
  close(): Promise<void>;
}

let counter = 0;

/** A real API on a random port over a private database, with the Stripe emulator, dev login on. */
export interface ApiHarnessOptions {
  /** The API's logger (default: silent); tests that inspect logs pass one writing to memory. */
  logger?: Logger;
  /** Time of domain rules (forward expiry, router metrics); token expiry keeps the real clock. */
  clock?: Clock;
  /** dev-login requests per minute per address; tests log in freely unless they test the limit. */
  devLoginPerMinute?: number;
  /** Webhook retry/poll timing (see ApiOverrides). */
  webhookTiming?: ApiOverrides["webhookTiming"];
  /** Alert engine poll and notification retry timing (see ApiOverrides). */
  alertTiming?: ApiOverrides["alertTiming"];
  /** Register the cluster-wide schedules (default off: tests call the scheduled functions). */
  schedules?: boolean;
  /** A database the test made itself (default: a private one from createTestDatabase). */
  db?: TestDatabase;
  /** The API port's connection guard (see ApiOverrides). */
  connections?: ApiOverrides["connections"];
  /** Open streams per credential and organization (see ApiOverrides). */
  streamLimits?: ApiOverrides["streamLimits"];
}

export const startApiHarness = async (
  env: Record<string, string> = {},
  options: ApiHarnessOptions = {},
): Promise<ApiHarness> => {
  const db = options.db ?? (await createTestDatabase());
  const config = loadApiConfig({
    PORT: "0",
    STRIPE_EMULATOR_PORT: "0",
    DATA_DIR: "memory",
    AUTH_DEV_LOGIN: "true",
    LOG_LEVEL: "silent",
    JWT_SECRET: `test-secret-${crypto.randomUUID()}`,
    // The production network, which the factories' routers sit in (development defaults to 127.64.0.0/10).
    TUNNEL_NETWORK: "100.64.0.0/10",
    // Every test calls from 127.0.0.1, many of them without a valid token on purpose; the limit
    // itself is tested with its own value (http/unauthenticated-rate-limit.test.ts).
    RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: "1000000",
    ...env,
  });
  const clock = new OffsetClock();
  let stripeEmulator: StripeEmulator | undefined;
  const api = await composeApi(
    { config, db, logger: options.logger ?? pino({ level: "silent" }) },
    {
      wallClock: clock,
      ...(options.clock ? { clock: options.clock } : {}),
      devLoginPerMinute: options.devLoginPerMinute ?? 1_000_000,
      schedules: options.schedules ?? false,
      ...(options.webhookTiming ? { webhookTiming: options.webhookTiming } : {}),
      // A request of a loaded CI machine may take longer than production's 10 s deadline, and a
      // test that works on the database for over 5 s between two requests must not find its
      // pooled keep-alive connection being closed (ECONNRESET); the guard's own tests
      // (connection-guard.test.ts) pass theirs.
      connections: { requestTimeoutMs: 120_000, keepAliveTimeoutMs: 120_000, ...options.connections },
      ...(options.streamLimits ? { streamLimits: options.streamLimits } : {}),
      ...(options.alertTiming ? { alertTiming: options.alertTiming } : {}),
      startStripeEmulator: async (emulatorOptions) => {
        stripeEmulator = await startStripeEmulator(emulatorOptions);
        return stripeEmulator;
      },
    },
  );
  const request: ApiHarness["request"] = async (method, path, options = {}) => {
    const headers: Record<string, string> = { ...options.headers };
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    let body: string | undefined = options.rawBody;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers["content-type"] ??= "application/json";
    }
    const res = await fetch(`${api.url}${path}`, { method, headers, body });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      // Not JSON: tests look at the text.
    }
    return { status: res.status, body: parsed, headers: res.headers };
  };
  const refused: ApiHarness["refused"] = async (method, path, options) => {
    // Processor events of earlier steps land first (the emulator posts them after answering), so
    // only this request is measured.
    const emulator = stripeEmulator;
    if (emulator) {
      await eventually(async () => {
        await emulator.webhooksIdle();
        return emulator.store.outbox.length === 0;
      }, "the emulator to deliver its webhook events");
    }
    const before = await databaseFingerprint(db);
    const res = await request(method, path, options);
    const after = await databaseFingerprint(db);
    if (after !== before) {
      const was = new Set(before.split(","));
      const changed = after
        .split(",")
        .filter((part) => !was.has(part))
        .map((part) => part.split(":")[0]);
      throw new Error(`${method} ${path} answered ${res.status} but changed the database (${changed.join(", ")})`);
    }
    return res;
  };
  const login: ApiHarness["login"] = async (email, extra = {}) => {
    const res = await request("POST", "/v1/auth/dev-login", {
      body: {
        email: email ?? `user-${process.pid}-${++counter}-${crypto.randomUUID().slice(0, 6)}@example.com`,
        ...extra,
      },
    });
    if (res.status !== 200) throw new Error(`dev-login failed: ${res.status} ${JSON.stringify(res.body)}`);
    return {
      token: res.body.access_token,
      userId: res.body.user_id,
      organizationId: res.body.organization_id,
      teamId: res.body.team_id,
    };
  };
  return {
    api,
    stripeEmulator,
    db,
    config,
    clock,
    request,
    refused,
    login,
    close: async () => {
      await api.close();
      await db.close();
    },
  };
};

/**
 * An API key made the way `npm run admin -- apikey create --org <id> --scopes ...` makes it (the
 * only way to a key with a platform scope such as `tunnel:assign`), for tests of the API alone.
 */
export const adminApiKey = async (
  db: TestDatabase,
  organizationId: string,
  scopes: readonly string[] = ["tunnel:assign", "routers:read", "routers:write", "account:read", "account:write"],
): Promise<string> => {
  const { key, prefix, keyHash } = mintApiKey();
  const record = await storeApiKey(
    db,
    {
      organizationId,
      createdBy: "admin-cli",
      name: "operator",
      prefix,
      keyHash,
      scopes,
      createdAt: new Date(),
      expiresAt: null,
    },
    SYSTEM_ORIGIN,
  );
  if (!record) throw new Error("the organization holds too many API keys");
  return key;
};
