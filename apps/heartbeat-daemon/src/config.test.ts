import { ConfigError } from "@fleet/shared";
import { describe, expect, it } from "vitest";
import { loadHeartbeatConfig } from "./config.ts";

describe("heartbeat daemon configuration", () => {
  it("defaults to docs/operations.md, Configuration", () => {
    expect(loadHeartbeatConfig({})).toMatchObject({
      host: "127.0.0.1",
      port: 3001,
      intervalMs: 30_000,
      missedHeartbeats: 10,
      databaseUrl: undefined,
      dataDir: "./.data",
      logLevel: "info",
      workers: 1,
    });
  });

  it("reads every variable", () => {
    const config = loadHeartbeatConfig({
      HOST: "0.0.0.0",
      HEARTBEAT_PORT: "4001",
      HEARTBEAT_INTERVAL_MS: "50",
      MISSED_HEARTBEATS: "1",
      DATABASE_URL: "postgres://u@db:5432/fleet",
      DATA_DIR: "/var/lib/fleet",
      LOG_LEVEL: "warn",
      HEARTBEAT_WORKERS: "64",
    });
    expect(config).toMatchObject({
      host: "0.0.0.0",
      port: 4001,
      intervalMs: 50,
      missedHeartbeats: 1,
      workers: 64,
      logLevel: "warn",
    });
    expect(config.databaseUrl).toBe("postgres://u@db:5432/fleet");
  });

  it.each([
    [{ HEARTBEAT_PORT: "65536" }, "HEARTBEAT_PORT"],
    [{ HEARTBEAT_INTERVAL_MS: "49" }, "HEARTBEAT_INTERVAL_MS"],
    [{ HEARTBEAT_INTERVAL_MS: "1.5" }, "HEARTBEAT_INTERVAL_MS"],
    [{ MISSED_HEARTBEATS: "0" }, "MISSED_HEARTBEATS"],
    [{ HEARTBEAT_WORKERS: "65", DATABASE_URL: "postgres://x/y" }, "HEARTBEAT_WORKERS"],
    [{ HEARTBEAT_WORKERS: "2" }, "HEARTBEAT_WORKERS"],
    [{ DATABASE_URL: "mysql://x/y" }, "DATABASE_URL"],
    [{ LOG_LEVEL: "loud" }, "LOG_LEVEL"],
  ])("refuses %j naming the variable", (env, variable) => {
    expect(() => loadHeartbeatConfig(env)).toThrow(ConfigError);
    expect(() => loadHeartbeatConfig(env)).toThrow(new RegExp(`^Invalid configuration: ${variable} `));
  });

  // docs/operations.md "Production": /metrics is never anonymous on the public ports.
  it("with NODE_ENV=production needs METRICS_TOKEN or METRICS_PORT, in one line naming METRICS_TOKEN", () => {
    expect(() => loadHeartbeatConfig({ NODE_ENV: "production" })).toThrow(
      /^Invalid configuration: METRICS_TOKEN must be set with NODE_ENV=production \(or METRICS_PORT\): /,
    );
    expect(loadHeartbeatConfig({ NODE_ENV: "production", METRICS_TOKEN: "t" }).metricsToken).toBe("t");
    expect(loadHeartbeatConfig({ NODE_ENV: "production", METRICS_PORT: "9100" }).metricsPort).toBe(9100);
    // The admin CLI reads only the database settings and serves nothing.
    expect(loadHeartbeatConfig({ NODE_ENV: "production" }, { serving: false }).port).toBe(3001);
  });

  it("HEALTH_PING_TARGET: as given, else the hub's tunnel address in wireguard mode, else none", () => {
    expect(loadHeartbeatConfig({}).healthPingTarget).toBeUndefined();
    expect(loadHeartbeatConfig({ HEALTH_PING_TARGET: "gw.example.net" }).healthPingTarget).toBe("gw.example.net");
    expect(loadHeartbeatConfig({ TUNNEL_MODE: "wireguard", TUNNEL_NETWORK: "10.77.0.0/16" }).healthPingTarget).toBe(
      "10.77.0.1",
    );
    expect(loadHeartbeatConfig({ TUNNEL_MODE: "wireguard", HEALTH_PING_TARGET: "192.0.2.7" }).healthPingTarget).toBe(
      "192.0.2.7",
    );
    expect(() => loadHeartbeatConfig({ HEALTH_PING_TARGET: 'x"; /system reboot' })).toThrow(ConfigError);
  });
});
