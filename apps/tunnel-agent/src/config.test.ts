import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ConfigError, generateEd25519KeyPair, generateWireguardKeyPair } from "@fleet/shared";
import { afterAll, describe, expect, it } from "vitest";
import { loadTunnelAgentConfig } from "./config.ts";
import { resolveAgentKey } from "./routeros/agent-key.ts";

const dir = mkdtempSync(path.join(tmpdir(), "fleet-agent-config-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("loadTunnelAgentConfig", () => {
  it("has the contract's defaults", () => {
    const config = loadTunnelAgentConfig({});
    expect(config.entryPoint).toEqual({
      host: "localhost",
      bind: "127.0.0.1",
      // Outside Linux's ephemeral range (32768-60999): no outgoing connection holds a forward's port.
      ports: [61000, 61999],
      proxyProtocol: false,
      tunnelSource: undefined,
    });
    // Development (NODE_ENV not production): a loopback tunnel network and an unprivileged SSH port,
    // the simulator's defaults too (docs/routeros.md "Simulator").
    expect(config.tunnelNetwork).toEqual({ cidr: "127.64.0.0/10", base: 0x7f400000, prefix: 10 });
    expect(config.ssh).toMatchObject({ port: 2222, user: "mgmt", keyFile: undefined });
    expect(config).toMatchObject({ databaseUrl: undefined, dataDir: "./.data", logLevel: "info" });
    expect(config.backups.maxBytes).toBe(4_194_304);
    const production = loadTunnelAgentConfig({
      NODE_ENV: "production",
      TUNNEL_SSH_KEY: "/etc/fleet/key",
      ACCESS_PASSWORD_KEY: "a".repeat(32),
    });
    expect(production.tunnelNetwork).toEqual({ cidr: "100.64.0.0/10", base: 0x64400000, prefix: 10 });
    expect(production.ssh.port).toBe(22);
  });

  it("reads every variable", () => {
    const config = loadTunnelAgentConfig({
      DATABASE_URL: "postgres://u@db.example:5432/fleet",
      ENTRY_POINT_HOST: "EU1.Entry.Example.com",
      ENTRY_POINT_BIND: "0.0.0.0",
      ENTRY_POINT_PORTS: "41000-41010",
      ENTRY_POINT_PROXY_PROTOCOL: "true",
      TUNNEL_SSH_PORT: "2222",
      TUNNEL_SSH_USER: "fleet",
      TUNNEL_SSH_KEY: "/etc/fleet/key",
      TUNNEL_JOB_LEASE_MS: "5000",
      TUNNEL_NETWORK: "10.99.1.7/16",
      ENTRY_POINT_TUNNEL_SOURCE: "10.255.0.9/24",
    });
    expect(config.entryPoint).toEqual({
      host: "eu1.entry.example.com",
      bind: "0.0.0.0",
      ports: [41000, 41010],
      proxyProtocol: true,
      tunnelSource: "10.255.0.0/24",
    });
    expect(config.tunnelNetwork.cidr).toBe("10.99.0.0/16");
    expect(loadTunnelAgentConfig({ ENTRY_POINT_TUNNEL_SOURCE: "10.255.0.1" }).entryPoint.tunnelSource).toBe(
      "10.255.0.1",
    );
    // RouterOS prints a /32 as the bare address; the agent compares what it reads with this.
    expect(loadTunnelAgentConfig({ ENTRY_POINT_TUNNEL_SOURCE: "10.255.0.1/32" }).entryPoint.tunnelSource).toBe(
      "10.255.0.1",
    );
    expect(config.ssh).toMatchObject({ port: 2222, user: "fleet", keyFile: "/etc/fleet/key" });
    expect(config.jobs.leaseMs).toBe(5000);
    expect(loadTunnelAgentConfig({ BACKUP_MAX_BYTES: "1048576" }).backups.maxBytes).toBe(1_048_576);
    expect(config.databaseUrl).toBe("postgres://u@db.example:5432/fleet");
  });

  it.each([
    ["ENTRY_POINT_PORTS", "40999-40000"],
    ["ENTRY_POINT_PORTS", "0-10"],
    ["ENTRY_POINT_PORTS", "40000"],
    ["ENTRY_POINT_BIND", "localhost"],
    ["ENTRY_POINT_HOST", "bad host;rm"],
    ["ENTRY_POINT_PROXY_PROTOCOL", "maybe"],
    ["TUNNEL_SSH_PORT", "0"],
    ["TUNNEL_SSH_PORT", "65536"],
    ["TUNNEL_JOB_LEASE_MS", "10"],
    ["BACKUP_MAX_BYTES", "4MiB"],
    ["BACKUP_MAX_BYTES", "0"],
    ["DATABASE_URL", "mysql://x"],
    ["TUNNEL_NETWORK", "100.64.0.0"],
    ["TUNNEL_NETWORK", "100.64.0.0/31"],
    ["TUNNEL_NETWORK", "fd00::/64"],
    ["TUNNEL_NETWORK", "100.064.0.0/10"],
    ["ENTRY_POINT_TUNNEL_SOURCE", "10.0.0.0/33"],
    ["ENTRY_POINT_TUNNEL_SOURCE", "10.0.0.1 in-interface=wan"],
    ["ENTRY_POINT_TUNNEL_SOURCE", "10.0.0.1;"],
    ["ENTRY_POINT_TUNNEL_SOURCE", "::1"],
  ])("stops on %s=%s with one line naming the variable", (name, value) => {
    const error = (() => {
      try {
        loadTunnelAgentConfig({ [name]: value });
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(new RegExp(`^Invalid configuration: ${name} `));
    expect((error as Error).message).not.toContain("\n");
  });
});

describe("resolveAgentKey", () => {
  it("generates a dev key once in DATA_DIR and reuses it, private file mode 600", () => {
    const first = resolveAgentKey(undefined, dir);
    const again = resolveAgentKey(undefined, dir);
    expect(again).toEqual(first);
    expect(first.publicKey).toMatch(/^ssh-ed25519 [A-Za-z0-9+/=]+$/);
    const file = path.join(dir, "tunnel-agent", "id_ed25519");
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(`${file}.pub`, "utf8")).toContain(first.publicKey);
  });

  it("uses TUNNEL_SSH_KEY when given, and a fresh key per process with DATA_DIR=memory", () => {
    const pair = generateEd25519KeyPair();
    const keyFile = path.join(dir, "given_key");
    writeFileSync(keyFile, pair.private);
    expect(resolveAgentKey(keyFile, "memory")).toEqual({ privateKey: pair.private, publicKey: pair.public.trim() });
    expect(resolveAgentKey(undefined, "memory").publicKey).not.toBe(resolveAgentKey(undefined, "memory").publicKey);
    writeFileSync(keyFile, "not a key");
    expect(() => resolveAgentKey(keyFile, "memory")).toThrow(/TUNNEL_SSH_KEY/);
  });
});

describe('loadTunnelAgentConfig in production (docs/operations.md "Production")', () => {
  const complete = {
    NODE_ENV: "production",
    TUNNEL_SSH_KEY: "/run/secrets/key",
    ACCESS_PASSWORD_KEY: "a".repeat(32),
  };
  const refusal = (env: Record<string, string | undefined>): string => {
    try {
      loadTunnelAgentConfig(env);
    } catch (error) {
      return (error as Error).message;
    }
    return "started";
  };

  it("needs TUNNEL_SSH_KEY: a key generated in a container's DATA_DIR is lost with it", () => {
    expect(refusal({ ...complete, TUNNEL_SSH_KEY: undefined })).toMatch(/^Invalid configuration: TUNNEL_SSH_KEY /);
    expect(loadTunnelAgentConfig(complete).ssh.keyFile).toBe("/run/secrets/key");
  });

  it("needs ACCESS_PASSWORD_KEY, shared with the API: one clear line naming it", () => {
    const line = refusal({ ...complete, ACCESS_PASSWORD_KEY: undefined });
    expect(line).toBe(
      "Invalid configuration: ACCESS_PASSWORD_KEY must be set with NODE_ENV=production: the API and every tunnel agent derive the same temporary router passwords from it",
    );
    expect(loadTunnelAgentConfig(complete).accessPasswordKey).toBe("a".repeat(32));
    const file = path.join(dir, "access-password-key");
    writeFileSync(file, `${"b".repeat(32)}\n`);
    const fromFile = { ...complete, ACCESS_PASSWORD_KEY: undefined, ACCESS_PASSWORD_KEY_FILE: file };
    expect(loadTunnelAgentConfig(fromFile).accessPasswordKey).toBe("b".repeat(32));
  });

  it("in wireguard mode needs the hub's private key (routers hold its public half)", () => {
    const hub = { ...complete, TUNNEL_MODE: "wireguard", TUNNEL_WG_ENDPOINT: "hub.example.net:51820" };
    expect(refusal(hub)).toMatch(
      /^Invalid configuration: TUNNEL_WG_PRIVATE_KEY must be set with NODE_ENV=production: /,
    );
    const key = generateWireguardKeyPair().privateKey;
    expect(loadTunnelAgentConfig({ ...hub, TUNNEL_WG_PRIVATE_KEY: key }).tunnel).toMatchObject({ privateKey: key });
    // Development generates one in DATA_DIR.
    expect(refusal({ ...hub, NODE_ENV: undefined })).toBe("started");
  });

  it("reads METRICS_TOKEN and DATABASE_URL from <NAME>_FILE", () => {
    const token = path.join(dir, "metrics-token");
    writeFileSync(token, "scrape-me\n");
    expect(loadTunnelAgentConfig({ METRICS_TOKEN_FILE: token }).metricsToken).toBe("scrape-me");
  });
});
