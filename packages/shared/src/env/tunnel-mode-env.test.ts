import { describe, expect, it } from "vitest";
import {
  generateWireguardKeyPair,
  isWireguardKey,
  wireguardKeyFromHex,
  wireguardKeyHex,
  wireguardPublicKey,
} from "../crypto/wireguard-keys.ts";
import { loadEntryPointEnv } from "./entry-point-env.ts";
import { ConfigError } from "./env-parsers.ts";
import { loadTunnelModeEnv } from "./tunnel-mode-env.ts";
import { envTunnelNetwork } from "./tunnel-network-env.ts";

const load = (env: Record<string, string>) => loadTunnelModeEnv(env, envTunnelNetwork(env));
const failure = (env: Record<string, string>): string => {
  try {
    load(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.variable;
    throw error;
  }
  return "";
};
const WG = { TUNNEL_MODE: "wireguard", TUNNEL_WG_ENDPOINT: "hub.example.net:51820" };

describe("TUNNEL_MODE and TUNNEL_WG_*", () => {
  it("defaults to external; wireguard takes the documented defaults", () => {
    expect(load({})).toEqual({ mode: "external" });
    expect(load(WG)).toEqual({
      mode: "wireguard",
      endpoint: { host: "hub.example.net", port: 51820 },
      listenPort: 51820,
      interfaceName: "fleet-wg",
      implementation: "auto",
      privateKey: undefined,
      publicKey: undefined,
      hubAddress: "100.64.0.1",
    });
  });

  it("keeps the hub's address from routers and makes it the entry point's tunnel source", () => {
    expect(envTunnelNetwork(WG).reserved).toEqual(["100.64.0.1"]);
    expect(envTunnelNetwork({}).reserved).toBeUndefined();
    expect(loadEntryPointEnv(WG).tunnelSource).toBe("100.64.0.1");
    expect(loadEntryPointEnv({ ...WG, ENTRY_POINT_TUNNEL_SOURCE: "10.0.0.1" }).tunnelSource).toBe("10.0.0.1");
    expect(loadEntryPointEnv({}).tunnelSource).toBeUndefined();
    const custom = { ...WG, TUNNEL_NETWORK: "100.100.0.0/16", TUNNEL_HUB_ADDRESS: "100.100.9.9" };
    expect(envTunnelNetwork(custom).reserved).toEqual(["100.100.9.9"]);
  });

  it("a bad value stops start-up naming the variable", () => {
    expect(failure({ TUNNEL_MODE: "openvpn" })).toBe("TUNNEL_MODE");
    expect(failure({ TUNNEL_MODE: "wireguard" })).toBe("TUNNEL_WG_ENDPOINT");
    for (const endpoint of ["hub.example.net", "hub:0", "hub:65536", "a b:1", ":51820", 'x";:1']) {
      expect(failure({ ...WG, TUNNEL_WG_ENDPOINT: endpoint })).toBe("TUNNEL_WG_ENDPOINT");
    }
    expect(load({ ...WG, TUNNEL_WG_ENDPOINT: "[2001:db8::1]:65535" }).mode).toBe("wireguard");
    expect(failure({ ...WG, TUNNEL_WG_PORT: "0" })).toBe("TUNNEL_WG_PORT");
    expect(failure({ ...WG, TUNNEL_WG_PORT: "65536" })).toBe("TUNNEL_WG_PORT");
    expect(failure({ ...WG, TUNNEL_WG_INTERFACE: "a-name-of-16-chr" })).toBe("TUNNEL_WG_INTERFACE");
    expect(load({ ...WG, TUNNEL_WG_INTERFACE: "a-name-of-15-ch" }).mode).toBe("wireguard");
    expect(failure({ ...WG, TUNNEL_WG_INTERFACE: "wg/0" })).toBe("TUNNEL_WG_INTERFACE");
    expect(failure({ ...WG, TUNNEL_WG_IMPLEMENTATION: "boringtun" })).toBe("TUNNEL_WG_IMPLEMENTATION");
    expect(failure({ ...WG, TUNNEL_WG_PRIVATE_KEY: "c2hvcnQ=" })).toBe("TUNNEL_WG_PRIVATE_KEY");
    expect(failure({ ...WG, TUNNEL_WG_PUBLIC_KEY: "x".repeat(44) })).toBe("TUNNEL_WG_PUBLIC_KEY");
    expect(failure({ ...WG, TUNNEL_HUB_ADDRESS: "10.0.0.1" })).toBe("TUNNEL_HUB_ADDRESS");
    expect(failure({ ...WG, TUNNEL_HUB_ADDRESS: "100.64.0.0" })).toBe("TUNNEL_HUB_ADDRESS");
  });

  it("never echoes a private key in its error", () => {
    const secret = `${"A".repeat(42)}B=`;
    try {
      load({ ...WG, TUNNEL_WG_PRIVATE_KEY: secret });
      expect.unreachable();
    } catch (error) {
      expect((error as Error).message).not.toContain(secret);
    }
  });
});

describe("WireGuard keys", () => {
  it("derives the public key as wg pubkey does, and speaks UAPI hex", () => {
    const pair = generateWireguardKeyPair();
    expect(isWireguardKey(pair.privateKey) && isWireguardKey(pair.publicKey)).toBe(true);
    expect(wireguardPublicKey(pair.privateKey)).toBe(pair.publicKey);
    expect(wireguardKeyFromHex(wireguardKeyHex(pair.publicKey))).toBe(pair.publicKey);
    // RFC 7748 6.1 test vector (Alice).
    const alice = Buffer.from("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a", "hex").toString(
      "base64",
    );
    expect(Buffer.from(wireguardPublicKey(alice), "base64").toString("hex")).toBe(
      "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a",
    );
  });

  it("accepts only the one canonical spelling of 32 bytes", () => {
    const key = generateWireguardKeyPair().publicKey;
    expect(isWireguardKey(key)).toBe(true);
    expect(isWireguardKey(key.slice(0, 43))).toBe(false);
    expect(isWireguardKey(`${key}=`)).toBe(false);
    expect(isWireguardKey(`${key.slice(0, 42)}B=`)).toBe(false); // padding bits set
    expect(isWireguardKey(`${key.slice(0, 42)}A=`)).toBe(true);
    expect(isWireguardKey(`${"A".repeat(42)}-=`)).toBe(false);
    expect(isWireguardKey(42)).toBe(false);
  });
});
