import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ConfigError, generateEd25519KeyPair } from "@fleet/shared";
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
      ports: [40000, 40999],
      proxyProtocol: false,
    });
    expect(config.ssh).toMatchObject({ port: 22, user: "mgmt", keyFile: undefined });
    expect(config).toMatchObject({ databaseUrl: undefined, dataDir: "./.data", logLevel: "info" });
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
    });
    expect(config.entryPoint).toEqual({
      host: "eu1.entry.example.com",
      bind: "0.0.0.0",
      ports: [41000, 41010],
      proxyProtocol: true,
    });
    expect(config.ssh).toMatchObject({ port: 2222, user: "fleet", keyFile: "/etc/fleet/key" });
    expect(config.jobs.leaseMs).toBe(5000);
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
    ["DATABASE_URL", "mysql://x"],
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
