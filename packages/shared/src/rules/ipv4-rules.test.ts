import { describe, expect, it } from "vitest";
import {
  IPV4_CIDR_PATTERN,
  IPV4_OR_CIDR_PATTERN,
  IPV4_PATTERN,
  checkDstAddress,
  classifyIpv4,
  ipv4InCidr,
  isCanonicalIpv4,
  normalizeAllowFrom,
  refuseLoopbackAllowFrom,
} from "./ipv4-rules.ts";

describe("isCanonicalIpv4", () => {
  it.each(["0.0.0.0", "1.2.3.4", "10.0.0.1", "255.255.255.255", "192.168.88.10"])("accepts %s", (value) => {
    expect(isCanonicalIpv4(value)).toBe(true);
  });

  // inet_aton spellings that name a real address to some parsers: the classic filter bypasses.
  it.each([
    "127.1",
    "0x7f.0.0.1",
    "0x7f000001",
    "017700000001",
    "2130706433",
    "0",
    "010.0.0.1",
    "192.168.088.10",
    "1.2.3.04",
    "256.1.1.1",
    "1.2.3",
    "1.2.3.4.5",
    " 1.2.3.4",
    "1.2.3.4 ",
    "1.2.3.4\n",
    "1.2.3.4/32",
    "::ffff:1.2.3.4",
    "::1",
    "１.2.3.4",
    "",
  ])("refuses %j", (value) => {
    expect(isCanonicalIpv4(value)).toBe(false);
  });
});

describe("classifyIpv4", () => {
  it.each([
    ["8.8.8.8", "public"],
    ["1.1.1.1", "public"],
    ["192.175.48.1", "public"],
    ["10.0.0.1", "private"],
    ["10.255.255.255", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.254", "private"],
    ["172.15.255.255", "public"],
    ["172.32.0.0", "public"],
    ["192.168.0.1", "private"],
    ["127.0.0.1", "loopback"],
    ["127.255.255.254", "loopback"],
    ["169.254.1.1", "link-local"],
    ["224.0.0.1", "multicast"],
    ["239.255.255.255", "multicast"],
    ["100.64.0.1", "carrier-grade NAT"],
    ["100.127.255.255", "carrier-grade NAT"],
    ["100.63.255.255", "public"],
    ["100.128.0.0", "public"],
    ["192.0.2.1", "documentation"],
    ["198.51.100.7", "documentation"],
    ["203.0.113.200", "documentation"],
    ["192.0.0.8", "reserved"],
    ["198.18.0.1", "reserved"],
    ["240.0.0.1", "reserved"],
    ["0.0.0.0", "unspecified"],
    ["0.1.2.3", "unspecified"],
    ["255.255.255.255", "broadcast"],
  ])("%s is %s", (address, kind) => {
    expect(classifyIpv4(address)).toBe(kind);
  });
});

describe("checkDstAddress", () => {
  it.each(["10.1.2.3", "172.16.5.4", "192.168.88.10", "8.8.4.4"])("accepts %s", (value) => {
    expect(checkDstAddress(value)).toEqual({ ok: true, value });
  });

  it.each([
    ["127.0.0.1", "loopback"],
    ["169.254.10.10", "link-local"],
    ["224.0.0.5", "multicast"],
    ["100.64.1.1", "carrier-grade NAT"],
    ["192.0.2.10", "documentation"],
    ["198.51.100.1", "documentation"],
    ["203.0.113.9", "documentation"],
    ["240.1.1.1", "reserved"],
    ["0.0.0.0", "unspecified"],
    ["255.255.255.255", "broadcast"],
  ])("refuses %s (%s) and names the reason", (value, reason) => {
    const result = checkDstAddress(value);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.message).toContain(reason);
  });

  it.each([
    "127.1",
    "0x7f.0.0.1",
    "017700000001",
    "0",
    '192.168.1.1"; /system reboot',
    "$(x)",
    "10.0.0.1]",
    "10.0.0.1\n",
  ])("refuses the non-canonical or hostile %j", (value) => {
    const result = checkDstAddress(value);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.message).toMatch(/four decimal numbers/);
  });
});

describe("normalizeAllowFrom", () => {
  it.each([
    ["8.8.8.8", "8.8.8.8/32"],
    ["8.8.8.8/32", "8.8.8.8/32"],
    ["8.8.8.77/24", "8.8.8.0/24"],
    ["8.8.8.0/24", "8.8.8.0/24"],
    ["1.2.3.4/30", "1.2.3.4/30"],
    ["1.2.3.7/30", "1.2.3.4/30"],
    ["81.2.69.160/27", "81.2.69.160/27"],
  ])("%s -> %s", (input, cidr) => {
    expect(normalizeAllowFrom(input)).toEqual({ ok: true, value: cidr });
  });

  it.each([
    ["8.8.8.0/23", /between \/24 and \/32, got \/23/],
    ["8.8.0.0/16", /between \/24 and \/32/],
    ["0.0.0.0/0", /between \/24 and \/32/],
    ["8.8.8.8/33", /prefix length written as a number/],
    ["8.8.8.8/024", /prefix length written as a number/],
    ["8.8.8.8/", /prefix length written as a number/],
    ["8.8.8.8/24/24", /IPv4 address or CIDR/],
    ["8.8.8.8/24 in-interface=ether1", /prefix length/],
    ["10.0.0.0/24", /publicly routed.*private/],
    ["192.168.1.1", /publicly routed.*private/],
    ["127.0.0.1", /loopback/],
    ["100.64.0.0/24", /carrier-grade NAT/],
    ["203.0.113.0/24", /documentation/],
    ["169.254.0.0/24", /link-local/],
    ["224.0.0.0/24", /multicast/],
    ["255.255.255.255", /broadcast/],
    ["0.0.0.0", /unspecified/],
    ["127.1", /four decimal numbers/],
    ["0x08.8.8.8", /four decimal numbers/],
    ['8.8.8.8"', /four decimal numbers/],
    ["8.8.8.8;", /four decimal numbers/],
    ["$ip", /four decimal numbers/],
  ])("refuses %j", (input, message) => {
    const result = normalizeAllowFrom(input);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.message).toMatch(message);
  });
});

describe("ipv4InCidr", () => {
  it("matches addresses as sockets report them", () => {
    expect(ipv4InCidr("8.8.8.8", "8.8.8.0/24")).toBe(true);
    expect(ipv4InCidr("::ffff:8.8.8.9", "8.8.8.0/24")).toBe(true);
    expect(ipv4InCidr("8.8.9.1", "8.8.8.0/24")).toBe(false);
    expect(ipv4InCidr("8.8.8.8", "8.8.8.8/32")).toBe(true);
    expect(ipv4InCidr("8.8.8.9", "8.8.8.8/32")).toBe(false);
    expect(ipv4InCidr("::1", "8.8.8.0/24")).toBe(false);
    expect(ipv4InCidr("garbage", "8.8.8.0/24")).toBe(false);
  });
});

describe("allow_from in development and production", () => {
  it("accepts a loopback source only when asked to (development), normalized like any other", () => {
    expect(normalizeAllowFrom("127.0.0.1")).toMatchObject({ ok: false, message: expect.stringMatching(/loopback/) });
    expect(normalizeAllowFrom("127.0.0.1", { loopback: true })).toEqual({ ok: true, value: "127.0.0.1/32" });
    expect(normalizeAllowFrom("127.64.3.9/24", { loopback: true })).toEqual({ ok: true, value: "127.64.3.0/24" });
    // The prefix rule still holds, and nothing else opens up.
    expect(normalizeAllowFrom("127.0.0.0/8", { loopback: true }).ok).toBe(false);
    expect(normalizeAllowFrom("10.0.0.1", { loopback: true }).ok).toBe(false);
  });

  it("refuseLoopbackAllowFrom refuses a normalized loopback range with the usual words, and passes the rest", () => {
    expect(refuseLoopbackAllowFrom("127.0.0.1/32")).toEqual({
      ok: false,
      message: "must be a publicly routed range; 127.0.0.1/32 is a loopback address (127.0.0.0/8)",
    });
    expect(refuseLoopbackAllowFrom("8.8.8.0/24")).toEqual({ ok: true, value: "8.8.8.0/24" });
  });
});

describe("the one IPv4 pattern", () => {
  it("accepts canonical quads and prefixes 0-32, and nothing inet_aton would also read", () => {
    for (const ok of ["0.0.0.0", "10.0.0.1", "255.255.255.255", "192.168.1.20"]) {
      expect(IPV4_PATTERN.test(ok), ok).toBe(true);
      expect(IPV4_OR_CIDR_PATTERN.test(ok), ok).toBe(true);
      expect(IPV4_CIDR_PATTERN.test(ok), ok).toBe(false);
      for (const prefix of [0, 9, 24, 32]) expect(IPV4_CIDR_PATTERN.test(`${ok}/${prefix}`)).toBe(true);
    }
    for (const bad of ["256.0.0.1", "010.0.0.1", "127.1", "0x7f.0.0.1", "1.2.3.4 ", "1.2.3.4;"]) {
      expect(IPV4_PATTERN.test(bad), bad).toBe(false);
      expect(IPV4_OR_CIDR_PATTERN.test(bad), bad).toBe(false);
    }
    for (const bad of ["1.2.3.4/33", "1.2.3.4/01", "1.2.3.4/"]) {
      expect(IPV4_CIDR_PATTERN.test(bad), bad).toBe(false);
      expect(IPV4_OR_CIDR_PATTERN.test(bad), bad).toBe(false);
    }
  });
});
