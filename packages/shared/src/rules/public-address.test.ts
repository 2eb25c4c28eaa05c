import { describe, expect, it } from "vitest";
import { isPubliclyRoutedAddress } from "./public-address.ts";

describe("isPubliclyRoutedAddress", () => {
  it("judges IPv4 by its range", () => {
    for (const a of ["8.8.8.8", "93.184.215.14", "1.1.1.1"]) expect(isPubliclyRoutedAddress(a), a).toBe(true);
    for (const a of ["127.0.0.1", "10.0.0.1", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1"])
      expect(isPubliclyRoutedAddress(a), a).toBe(false);
    for (const a of ["192.0.2.1", "198.51.100.1", "203.0.113.1", "0.0.0.0", "255.255.255.255", "224.0.0.1"])
      expect(isPubliclyRoutedAddress(a), a).toBe(false);
  });

  it("judges plain IPv6 by its range", () => {
    expect(isPubliclyRoutedAddress("2606:4700:4700::1111")).toBe(true);
    for (const a of ["::1", "::", "fe80::1", "fd00::1", "ff02::1", "2001:db8::1", "2001::1"])
      expect(isPubliclyRoutedAddress(a), a).toBe(false);
  });

  // docs/api.md "Audit log and webhooks": an IPv6 literal that embeds an IPv4 address is judged by
  // the IPv4 address inside it, whichever of the embedding forms carries it.
  it.each([
    ["IPv4-compatible", "::127.0.0.1", "::8.8.8.8"],
    ["IPv4-compatible, private", "::10.0.0.1", "::93.184.215.14"],
    ["IPv4-compatible, hex", "::7f00:1", "::808:808"],
    ["IPv4-mapped", "::ffff:127.0.0.1", "::ffff:8.8.8.8"],
    ["IPv4-mapped, hex", "::ffff:a9fe:a9fe", "::ffff:808:808"],
    ["SIIT", "::ffff:0:192.168.0.1", "::ffff:0:8.8.8.8"],
    ["NAT64", "64:ff9b::127.0.0.1", "64:ff9b::8.8.8.8"],
    ["NAT64, metadata address", "64:ff9b::a9fe:a9fe", "64:ff9b::101:101"],
    ["6to4", "2002:7f00:1::1", "2002:808:808::1"],
    ["6to4, private", "2002:a00:1::", "2002:5db8:d70e:1::5"],
    ["6to4, CGNAT", "2002:6440:1::1", "2002:101:101::"],
  ])("%s: %s refused, %s allowed", (_label, inside, outside) => {
    expect(isPubliclyRoutedAddress(inside)).toBe(false);
    expect(isPubliclyRoutedAddress(outside)).toBe(true);
  });

  it("refuses what is not an address", () => {
    for (const a of ["", "localhost", "::g", "1.2.3.4.5"]) expect(isPubliclyRoutedAddress(a), a).toBe(false);
  });
});
