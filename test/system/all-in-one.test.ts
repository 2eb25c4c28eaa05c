import { createTestDatabase, type TestDatabase } from "@fleet/db/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { START_TIMEOUT_MS, spawnSystem, type SystemProcess, waitForOutput } from "./process-harness.ts";

/**
 * `npm start` as a newcomer meets it: a real process, its banner, a token, the no-account answer,
 * an account, and a graceful exit on SIGTERM. On CI's PostgreSQL run it uses a private database.
 */
describe("npm start (all-in-one process)", () => {
  let db: TestDatabase | undefined;
  let system: SystemProcess;
  let url: string;

  beforeAll(async () => {
    const env: Record<string, string> = {
      PORT: "0",
      HEARTBEAT_PORT: "0",
      STRIPE_EMULATOR_PORT: "0",
      LOG_LEVEL: "info",
    };
    if (process.env.DATABASE_URL) {
      db = await createTestDatabase();
      env.DATABASE_URL = db.url ?? "";
    }
    system = spawnSystem("apps/all-in-one/src/main.ts", env);
    url = await waitForOutput(system, /API\s+(http:\/\/\S+)/);
  }, START_TIMEOUT_MS);

  afterAll(async () => {
    system?.cleanup();
    await db?.close();
  });

  it("prints where everything is and how to get a token", () => {
    expect(system.stderr()).toMatch(/Docs\s+http:\/\/\S+\/docs/);
    expect(system.stderr()).toMatch(/dev-login/);
  });

  it("serves the newcomer flow end to end", async () => {
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    const login = await fetch(`${url}/v1/auth/dev-login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: "newcomer@example.com" }),
    });
    expect(login.status).toBe(200);
    const { access_token: token } = (await login.json()) as { access_token: string };
    const auth = { authorization: `Bearer ${token}`, "content-type": "application/json" };
    const missing = await fetch(`${url}/v1/account`, { headers: auth });
    expect(missing.status).toBe(422);
    expect(((await missing.json()) as { documentation_url: string }).documentation_url).toMatch(/docs/);
    const created = await fetch(`${url}/v1/account`, {
      method: "POST",
      headers: auth,
      body: JSON.stringify({ name: "Acme", email: "billing@acme.example", address: { country: "DE" } }),
    });
    expect(created.status).toBe(201);
    expect((await fetch(`${url}/v1/account`, { headers: auth })).status).toBe(200);
    // Logs are JSON lines and never carry the token.
    const lines = system.stdout().trim().split("\n").filter(Boolean);
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
    expect(system.stdout()).not.toContain(token);
  });

  it("shuts down gracefully on SIGTERM with exit code 0", async () => {
    system.child.kill("SIGTERM");
    expect(await system.exited).toBe(0);
  });
});

describe("configuration errors", () => {
  it.each([
    ["PORT", "99999"],
    ["DATABASE_URL", "not a url"],
    ["JWT_SECRET", "short"],
    ["AUTH_DEV_LOGIN", "maybe"],
  ])("a bad %s stops start-up with one line naming it", async (name, value) => {
    const proc = spawnSystem("apps/all-in-one/src/main.ts", {
      PORT: "0",
      STRIPE_EMULATOR_PORT: "0",
      HEARTBEAT_PORT: "0",
      [name]: value,
    });
    try {
      expect(await proc.exited).toBe(1);
      const lines = proc.stderr().trim().split("\n");
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(name);
      expect(lines[0]).not.toContain(value === "short" ? "short" : "\u0000");
    } finally {
      proc.cleanup();
    }
  });

  // Each process stops before it opens anything: the first missing thing, in one line on stderr.
  const production = {
    PORT: "0",
    STRIPE_EMULATOR_PORT: "0",
    HEARTBEAT_PORT: "0",
    AGENT_HEALTH_PORT: "0",
    NODE_ENV: "production",
    JWT_SECRET: "j".repeat(32),
    WEBHOOK_ENCRYPTION_KEY: "w".repeat(32),
    ACCESS_PASSWORD_KEY: "a".repeat(32),
    TUNNEL_SSH_KEY: "/nonexistent/key",
    METRICS_TOKEN: "scrape-token",
  };
  it.each([
    ["apps/all-in-one/src/main.ts", {}, "STRIPE_SECRET_KEY"],
    ["apps/all-in-one/src/main.ts", { STRIPE_EMULATOR: "true", ACCESS_PASSWORD_KEY: undefined }, "ACCESS_PASSWORD_KEY"],
    ["apps/tunnel-agent/src/main.ts", { ACCESS_PASSWORD_KEY: undefined }, "ACCESS_PASSWORD_KEY"],
    // /metrics is never anonymous on the public ports (docs/operations.md "Production").
    ["apps/all-in-one/src/main.ts", { STRIPE_EMULATOR: "true", METRICS_TOKEN: undefined }, "METRICS_TOKEN"],
    ["apps/heartbeat-daemon/src/main.ts", { METRICS_TOKEN: undefined }, "METRICS_TOKEN"],
  ])("NODE_ENV=production: %s with %o stops start-up with one line naming %s", async (entry, change, variable) => {
    const env = Object.fromEntries(
      Object.entries({ ...production, ...change }).filter((pair): pair is [string, string] => pair[1] !== undefined),
    );
    const proc = spawnSystem(entry, env);
    try {
      expect(await proc.exited).toBe(1);
      const lines = proc.stderr().trim().split("\n");
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(new RegExp(`^Invalid configuration: ${variable} must be set with NODE_ENV=production`));
      expect(proc.stderr()).not.toContain("j".repeat(32));
      expect(proc.stderr()).not.toContain("a".repeat(32));
    } finally {
      proc.cleanup();
    }
  });
});
