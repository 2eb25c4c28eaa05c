/**
 * The environment every in-process end-to-end system starts from: random ports, in-memory data,
 * silent logs, dev login on, a fresh JWT secret. Tests add what their scenario needs.
 *
 * A test whose relay listens gives it an `ENTRY_POINT_PORTS` block of its own in 63000-63899, one
 * block per file, never overlapping another file's (files run in parallel). Never below 61000: the
 * kernel hands ports 32768-60999 to outgoing connections (PostgreSQL clients, HTTP calls), and a
 * forward's port taken that way could not be listened on (it failed CI's PostgreSQL pass). Blocks in
 * use: forwards.e2e 63000-63199, backups.e2e 63200-63299, routers.e2e 63300-63309, simulator.e2e
 * 63310-63319, adoption.e2e 63320-63339, signals 63340-63349, observability 63350-63359,
 * address-reuse.e2e 63360-63379, tracing 63380-63389, console.e2e 63390-63399, access.e2e
 * 63400-63499, agent-queue 63500-63599, job-lease 63600-63699, wireguard-tunnel.e2e 63700-63799,
 * start-tunnel-agent 63800-63839, notifications.e2e 63840-63849, alerts.e2e 63850-63859,
 * changes.e2e 63860-63869, console changes.e2e 63870-63879, health.e2e 63880-63889. The README
 * doctest draws its block from 61000-62999.
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
