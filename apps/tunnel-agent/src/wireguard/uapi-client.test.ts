import { generateWireguardKeyPair, wireguardKeyHex } from "@fleet/shared";
import { describe, expect, it } from "vitest";
import { checkedEndpoint, parseUapiGet, UapiError, uapiSetRequest } from "./uapi-client.ts";
import { parseWgDump, wgSetArgs } from "./wireguard-interface.ts";

const a = generateWireguardKeyPair().publicKey;
const b = generateWireguardKeyPair().publicKey;

describe("the WireGuard control protocols", () => {
  it("writes one set=1 request for a whole batch: removals, then peers with their allowed IPs replaced", () => {
    expect(uapiSetRequest({ put: [{ publicKey: a, allowedIps: ["100.64.0.7/32"] }], remove: [b], replace: true })).toBe(
      [
        "set=1",
        "replace_peers=true",
        `public_key=${wireguardKeyHex(b)}`,
        "remove=true",
        `public_key=${wireguardKeyHex(a)}`,
        "replace_allowed_ips=true",
        "allowed_ip=100.64.0.7/32",
        "",
        "",
      ].join("\n"),
    );
  });

  it("reads peers and their last handshakes from a get=1 answer, and refuses a non-zero errno", () => {
    const answer = [
      "private_key=00",
      "listen_port=51820",
      `public_key=${wireguardKeyHex(a)}`,
      "endpoint=10.0.0.2:4000",
      "last_handshake_time_sec=1795600000",
      "last_handshake_time_nsec=500000000",
      "allowed_ip=100.64.0.7/32",
      `public_key=${wireguardKeyHex(b)}`,
      "last_handshake_time_sec=0",
      "last_handshake_time_nsec=0",
      "errno=0",
      "",
      "",
    ].join("\n");
    expect(parseUapiGet(answer)).toEqual({
      publicKey: null,
      listenPort: 51820,
      peers: [
        {
          publicKey: a,
          endpoint: "10.0.0.2:4000",
          allowedIps: ["100.64.0.7/32"],
          lastHandshakeAt: new Date(1_795_600_000_500),
        },
        { publicKey: b, endpoint: null, allowedIps: [], lastHandshakeAt: null },
      ],
    });
    expect(() => parseUapiGet("errno=-22\n\n")).toThrow(UapiError);
  });

  it("reads `wg show <if> dump` (Linux WireGuard) the same way", () => {
    const dump = `priv\t${a}\t51820\toff\n${b}\t(none)\t10.0.0.2:4000\t100.64.0.9/32\t1795600000\t10\t20\t25\n`;
    expect(parseWgDump(dump)).toEqual({
      publicKey: a,
      listenPort: 51820,
      peers: [
        {
          publicKey: b,
          endpoint: "10.0.0.2:4000",
          allowedIps: ["100.64.0.9/32"],
          lastHandshakeAt: new Date(1_795_600_000_000),
        },
      ],
    });
  });

  it("primes a peer's endpoint in both protocols, and refuses anything but ip:port (no injected lines)", () => {
    const request = uapiSetRequest({
      put: [{ publicKey: a, allowedIps: ["100.64.0.7/32"], endpoint: "10.0.0.2:4000" }],
      remove: [],
    });
    expect(request).toBe(
      [
        "set=1",
        `public_key=${wireguardKeyHex(a)}`,
        "endpoint=10.0.0.2:4000",
        "replace_allowed_ips=true",
        "allowed_ip=100.64.0.7/32",
        "",
        "",
      ].join("\n"),
    );
    expect(checkedEndpoint("[2001:db8::1]:51820")).toBe("[2001:db8::1]:51820");
    for (const bad of ["10.0.0.2", "10.0.0.2:4000\nremove=true", "host.example:51820", "10.0.0.2:4000 "]) {
      expect(() => uapiSetRequest({ put: [{ publicKey: a, allowedIps: [], endpoint: bad }], remove: [] })).toThrow(
        RangeError,
      );
    }
  });

  it("builds Linux WireGuard's one `wg set` per batch (the kernel path, untested against a kernel here)", () => {
    const stray = generateWireguardKeyPair().publicKey;
    expect(
      wgSetArgs(
        "fleet-wg",
        {
          put: [{ publicKey: a, allowedIps: ["100.64.0.7/32"], endpoint: "10.0.0.2:4000" }],
          remove: [b],
          replace: true,
        },
        [{ publicKey: a }, { publicKey: stray }],
      ),
    ).toEqual([
      "set",
      "fleet-wg",
      "peer",
      stray,
      "remove",
      "peer",
      b,
      "remove",
      "peer",
      a,
      "endpoint",
      "10.0.0.2:4000",
      "allowed-ips",
      "100.64.0.7/32",
    ]);
    expect(wgSetArgs("fleet-wg", { put: [], remove: [] }, [{ publicKey: a }])).toBeUndefined();
    expect(wgSetArgs("fleet-wg", { put: [], remove: [], replace: true }, [{ publicKey: a }])).toEqual([
      "set",
      "fleet-wg",
      "peer",
      a,
      "remove",
    ]);
  });
});
