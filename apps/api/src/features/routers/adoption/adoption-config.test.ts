import { generateKeyPairSync } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ConfigError } from "@fleet/shared";
import { afterAll, describe, expect, it } from "vitest";
import { loadApiConfig } from "../../../config.ts";
import { agentPublicKeySource } from "./agent-public-key.ts";

const dir = mkdtempSync(path.join(tmpdir(), "fleet-adoption-config-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const wire = (value: Buffer | string): Buffer => {
  const bytes = typeof value === "string" ? Buffer.from(value) : value;
  const length = Buffer.alloc(4);
  length.writeUInt32BE(bytes.length);
  return Buffer.concat([length, bytes]);
};

/** An ed25519 key pair written the way ssh-keygen writes it (openssh-key-v1, unencrypted), and its public line. */
const openSshPair = () => {
  const pair = generateKeyPairSync("ed25519");
  const pub = Buffer.from(pair.publicKey.export({ format: "jwk" }).x ?? "", "base64url");
  const priv = Buffer.from(pair.privateKey.export({ format: "jwk" }).d ?? "", "base64url");
  const blob = Buffer.concat([wire("ssh-ed25519"), wire(pub)]);
  const check = Buffer.from([1, 2, 3, 4, 1, 2, 3, 4]);
  const secret = Buffer.concat([
    check,
    wire("ssh-ed25519"),
    wire(pub),
    wire(Buffer.concat([priv, pub])),
    wire("test"),
    Buffer.from([1, 2, 3]),
  ]);
  const body = Buffer.concat([
    Buffer.from("openssh-key-v1\0"),
    wire("none"),
    wire("none"),
    wire(""),
    Buffer.from([0, 0, 0, 1]),
    wire(blob),
    wire(secret),
  ]);
  const lines = body.toString("base64").match(/.{1,70}/g) ?? [];
  return {
    privateKey: `${"-".repeat(5)}BEGIN OPENSSH PRIVATE KEY${"-".repeat(5)}\n${lines.join("\n")}\n${"-".repeat(5)}END OPENSSH PRIVATE KEY${"-".repeat(5)}\n`,
    publicLine: `ssh-ed25519 ${blob.toString("base64")}`,
  };
};
const OPENSSH = openSshPair();
const OPENSSH_PRIVATE = OPENSSH.privateKey;
const OPENSSH_PUBLIC = OPENSSH.publicLine;

describe("adoption configuration", () => {
  it("has the contract's defaults", () => {
    expect(loadApiConfig({}).adoption).toEqual({
      apiPublicUrl: undefined,
      heartbeatPublicUrl: undefined,
      heartbeatPort: 3001,
      intervalMs: 30_000,
      sshUser: "mgmt",
      sshKeyFile: undefined,
      sshPublicKey: undefined,
      // Development's loopback network; production's is 100.64.0.0/10.
      tunnelNetwork: "127.64.0.0/10",
      tunnel: { mode: "external" },
      sshPort: 2222,
      pingTarget: undefined,
    });
    // Production, with what production requires (docs/operations.md "Production").
    const production = loadApiConfig({
      NODE_ENV: "production",
      JWT_SECRET: "s".repeat(32),
      STRIPE_EMULATOR: "true",
      WEBHOOK_ENCRYPTION_KEY: "s".repeat(32),
      ACCESS_PASSWORD_KEY: "s".repeat(32),
      TUNNEL_SSH_PUBLIC_KEY: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKey",
      METRICS_TOKEN: "scrape-token",
    }).adoption;
    expect(production.tunnelNetwork).toBe("100.64.0.0/10");
    expect(production.sshPort).toBe(22);
  });

  it.each([
    [{ API_PUBLIC_URL: "https://api.example.net/" }, null],
    [{ API_PUBLIC_URL: "ftp://api.example.net" }, "API_PUBLIC_URL"],
    [{ API_PUBLIC_URL: "https://user:pw@api.example.net" }, "API_PUBLIC_URL"],
    [{ HEARTBEAT_PUBLIC_URL: "https://hb.example.net:8443" }, null],
    [{ HEARTBEAT_PUBLIC_URL: "https://hb.example.net/?x=1" }, "HEARTBEAT_PUBLIC_URL"],
    [{ TUNNEL_SSH_USER: "fleet.mgmt-1" }, null],
    [{ TUNNEL_SSH_USER: "mgmt; /system reboot" }, "TUNNEL_SSH_USER"],
    [{ TUNNEL_SSH_USER: "x".repeat(65) }, "TUNNEL_SSH_USER"],
    [{ TUNNEL_NETWORK: "10.0.0.0/8" }, null],
    [{ TUNNEL_NETWORK: "10.0.0.0" }, "TUNNEL_NETWORK"],
    [{ TUNNEL_NETWORK: "10.0.0.0/33" }, "TUNNEL_NETWORK"],
    [{ TUNNEL_SSH_PUBLIC_KEY: `${OPENSSH_PUBLIC} comment` }, null],
    [{ TUNNEL_SSH_PUBLIC_KEY: 'ssh-ed25519 AAAA"; /system reboot' }, "TUNNEL_SSH_PUBLIC_KEY"],
    [{ HEARTBEAT_INTERVAL_MS: "49" }, "HEARTBEAT_INTERVAL_MS"],
    [{ HEALTH_PING_TARGET: "192.0.2.1" }, null],
    [{ HEALTH_PING_TARGET: "gw.example.net" }, null],
    [{ HEALTH_PING_TARGET: "192.0.2.1 count=1000" }, "HEALTH_PING_TARGET"],
    [{ HEALTH_PING_TARGET: 'x"; /system reboot' }, "HEALTH_PING_TARGET"],
  ])("%j -> %s", (env, variable) => {
    if (variable === null) expect(() => loadApiConfig(env)).not.toThrow();
    else expect(() => loadApiConfig(env)).toThrow(new RegExp(`^Invalid configuration: ${variable} `));
    if (variable) expect(() => loadApiConfig(env)).toThrow(ConfigError);
  });

  it("keeps public URLs without a trailing slash and the key line without its comment", () => {
    const { adoption } = loadApiConfig({
      API_PUBLIC_URL: "https://api.example.net/",
      TUNNEL_SSH_PUBLIC_KEY: `${OPENSSH_PUBLIC} agent@fleet`,
    });
    expect(adoption.apiPublicUrl).toBe("https://api.example.net");
    expect(adoption.sshPublicKey).toBe(OPENSSH_PUBLIC);
  });

  it("pings the hub by default in wireguard mode, else nothing unless HEALTH_PING_TARGET says", () => {
    const wireguard = { TUNNEL_MODE: "wireguard", TUNNEL_WG_ENDPOINT: "hub.example.net:51820" };
    const { adoption } = loadApiConfig(wireguard);
    expect(adoption.tunnel.mode === "wireguard" && adoption.tunnel.hubAddress).toBe(adoption.pingTarget);
    expect(adoption.pingTarget).toMatch(/^\d+\.\d+\.\d+\.1$/);
    expect(loadApiConfig({ ...wireguard, HEALTH_PING_TARGET: "192.0.2.7" }).adoption.pingTarget).toBe("192.0.2.7");
    expect(loadApiConfig({ HEALTH_PING_TARGET: "192.0.2.7" }).adoption.pingTarget).toBe("192.0.2.7");
  });
});

describe("the agent's public key", () => {
  const config = (env: Record<string, string>) => loadApiConfig(env).adoption;

  it("is read from an OpenSSH private key without its passphrase or a .pub file", () => {
    const file = path.join(dir, "openssh_key");
    writeFileSync(file, OPENSSH_PRIVATE);
    expect(agentPublicKeySource(config({ TUNNEL_SSH_KEY: file }), "memory")()).toBe(OPENSSH_PUBLIC);
  });

  it("is read from a PEM ed25519 key", () => {
    const pair = generateKeyPairSync("ed25519");
    const file = path.join(dir, "pem_key");
    writeFileSync(file, pair.privateKey.export({ format: "pem", type: "pkcs8" }));
    const line = agentPublicKeySource(config({ TUNNEL_SSH_KEY: file }), "memory")();
    const raw = pair.publicKey.export({ format: "jwk" }).x ?? "";
    expect(line).toMatch(/^ssh-ed25519 /);
    expect(
      Buffer.from(line?.split(" ")[1] ?? "", "base64")
        .subarray(-32)
        .toString("base64url"),
    ).toBe(raw);
  });

  it("prefers <key>.pub, and reads the dev key once the agent has written it", () => {
    const file = path.join(dir, "with_pub");
    writeFileSync(file, "not a key");
    writeFileSync(`${file}.pub`, `${OPENSSH_PUBLIC} from-pub\n`);
    expect(agentPublicKeySource(config({ TUNNEL_SSH_KEY: file }), "memory")()).toBe(OPENSSH_PUBLIC);

    const dataDir = path.join(dir, "data");
    const source = agentPublicKeySource(config({}), dataDir);
    expect(source()).toBeUndefined();
    mkdirSync(path.join(dataDir, "tunnel-agent"), { recursive: true });
    writeFileSync(path.join(dataDir, "tunnel-agent", "id_ed25519.pub"), `${OPENSSH_PUBLIC} fleet-tunnel-agent\n`);
    expect(source()).toBe(OPENSSH_PUBLIC);
    expect(agentPublicKeySource(config({}), "memory")()).toBeUndefined();
  });
});
