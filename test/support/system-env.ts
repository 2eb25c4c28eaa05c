/**
 * The environment every in-process end-to-end system starts from: random ports, in-memory data,
 * silent logs, dev login on, a fresh JWT secret. Tests add what their scenario needs.
 */
export const testSystemEnv = (overrides: Record<string, string> = {}): Record<string, string> => ({
  PORT: "0",
  HEARTBEAT_PORT: "0",
  STRIPE_EMULATOR_PORT: "0",
  DATA_DIR: "memory",
  LOG_LEVEL: "silent",
  AUTH_DEV_LOGIN: "true",
  JWT_SECRET: `e2e-secret-${crypto.randomUUID()}`,
  // Every test calls from loopback; the per-address limit has tests of its own.
  RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: "1000000",
  ...overrides,
});
