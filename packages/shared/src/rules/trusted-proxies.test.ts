import { describe, expect, it } from "vitest";
import { clientAddress, NO_TRUSTED_PROXIES, parseTrustedProxies, type TrustedProxies } from "./trusted-proxies.ts";

const trusted = parseTrustedProxies("10.0.0.0/8,127.0.0.1") as TrustedProxies;

describe("clientAddress (TRUST_PROXY)", () => {
  it.each([
    ["an untrusted peer: its X-Forwarded-For is ignored", "203.0.113.9", "198.51.100.1", "203.0.113.9"],
    ["a trusted peer: the rightmost entry", "10.1.2.3", "198.51.100.1, 198.51.100.2", "198.51.100.2"],
    ["trusted hops are skipped from the right", "127.0.0.1", "198.51.100.1, 10.9.9.9", "198.51.100.1"],
    ["an IPv4-mapped peer counts as its IPv4", "::ffff:127.0.0.1", "198.51.100.3", "198.51.100.3"],
    ["a malformed entry ends the walk at the last true address", "10.1.2.3", "evil, not-an-ip", "10.1.2.3"],
    ["only trusted hops: the leftmost of them", "10.1.2.3", "10.0.0.9", "10.0.0.9"],
  ])("%s", (_case, peer, forwarded, expected) => {
    expect(clientAddress(peer, forwarded, trusted)).toBe(expected);
  });

  it("trusts nobody by default and without a header", () => {
    expect(clientAddress("10.1.2.3", "198.51.100.1", NO_TRUSTED_PROXIES)).toBe("10.1.2.3");
    expect(clientAddress("10.1.2.3", undefined, trusted)).toBe("10.1.2.3");
  });

  it("refuses what is not an address or CIDR", () => {
    for (const bad of ["10.0.0.0/33", "proxy.internal", "10.0.0.1/8/9"])
      expect(typeof parseTrustedProxies(bad)).toBe("string");
  });
});
