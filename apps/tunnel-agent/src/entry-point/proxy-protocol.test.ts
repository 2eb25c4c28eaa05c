import { describe, expect, it } from "vitest";
import { parseProxyHeader, proxyV1Header, proxyV2Header } from "./proxy-protocol.ts";

const src = { address: "8.8.8.8", port: 51234 };
const dst = { address: "127.0.0.1", port: 40001 };

describe("parseProxyHeader v1", () => {
  it("parses TCP4 and says where the client's bytes start", () => {
    const buffer = Buffer.concat([proxyV1Header(src, dst), Buffer.from("SSH-2.0-x")]);
    const result = parseProxyHeader(buffer);
    expect(result).toEqual({
      status: "ok",
      header: { command: "proxy", family: "tcp4", source: src, destination: dst },
      length: "PROXY TCP4 8.8.8.8 127.0.0.1 51234 40001\r\n".length,
    });
    if (result.status === "ok") expect(buffer.subarray(result.length).toString()).toBe("SSH-2.0-x");
  });

  it("parses TCP6 and UNKNOWN", () => {
    expect(parseProxyHeader(Buffer.from("PROXY TCP6 2001:db8::1 ::1 1 2\r\n"))).toMatchObject({
      status: "ok",
      header: { command: "proxy", family: "tcp6", source: { address: "2001:db8::1", port: 1 } },
    });
    expect(parseProxyHeader(Buffer.from("PROXY UNKNOWN\r\n"))).toEqual({
      status: "ok",
      header: { command: "local" },
      length: 15,
    });
  });

  it("waits for more bytes at every prefix of a header", () => {
    const full = proxyV1Header(src, dst);
    for (let n = 1; n < full.length; n++) expect(parseProxyHeader(full.subarray(0, n)).status).toBe("incomplete");
  });

  it.each([
    "PROXY TCP4 8.8.8.8 127.0.0.1 51234\r\n",
    "PROXY TCP4 8.8.8 127.0.0.1 1 2\r\n",
    "PROXY TCP4 008.8.8.8 127.0.0.1 1 2\r\n",
    "PROXY TCP4 0x08.8.8.8 127.0.0.1 1 2\r\n",
    "PROXY TCP4 8.8.8.8 127.0.0.1 65536 2\r\n",
    "PROXY TCP4 8.8.8.8 127.0.0.1 01 2\r\n",
    "PROXY TCP4  8.8.8.8 127.0.0.1 1 2\r\n",
    "PROXY UDP4 8.8.8.8 127.0.0.1 1 2\r\n",
    "PROXY TCP4 ::1 127.0.0.1 1 2\r\n",
    "GET / HTTP/1.1\r\n",
    `PROXY TCP4 ${"1".repeat(120)}`,
  ])("refuses %j", (text) => {
    expect(parseProxyHeader(Buffer.from(text)).status).toBe("invalid");
  });
});

describe("parseProxyHeader v2", () => {
  it("parses PROXY over TCP/IPv4, skipping TLVs", () => {
    const tlvs = Buffer.from([0x04, 0x00, 0x03, 0x61, 0x62, 0x63]);
    const header = proxyV2Header(src, dst, tlvs);
    const result = parseProxyHeader(Buffer.concat([header, Buffer.from("hello")]));
    expect(result).toEqual({
      status: "ok",
      header: { command: "proxy", family: "tcp4", source: src, destination: dst },
      length: header.length,
    });
  });

  it("parses TCP/IPv6 and LOCAL", () => {
    const v6 = Buffer.alloc(16 + 36);
    proxyV2Header(src, dst).copy(v6, 0, 0, 12);
    v6[12] = 0x21;
    v6[13] = 0x21;
    v6.writeUInt16BE(36, 14);
    v6[31] = 1; // source ::1
    v6.writeUInt16BE(443, 48);
    expect(parseProxyHeader(v6)).toMatchObject({
      status: "ok",
      header: { family: "tcp6", source: { address: "::1", port: 443 } },
    });
    const local = proxyV2Header(src, dst);
    local[12] = 0x20;
    expect(parseProxyHeader(local)).toMatchObject({ status: "ok", header: { command: "local" } });
  });

  it("waits for more bytes at every prefix of a header", () => {
    const full = proxyV2Header(src, dst);
    for (let n = 1; n < full.length; n++) expect(parseProxyHeader(full.subarray(0, n)).status).toBe("incomplete");
  });

  it("refuses a wrong version, command, family or length", () => {
    const bad = (mutate: (b: Buffer) => void) => {
      const b = proxyV2Header(src, dst);
      mutate(b);
      return parseProxyHeader(b).status;
    };
    expect(bad((b) => (b[12] = 0x11))).toBe("invalid");
    expect(bad((b) => (b[12] = 0x22))).toBe("invalid");
    expect(bad((b) => (b[13] = 0x12))).toBe("invalid");
    expect(bad((b) => b.writeUInt16BE(4, 14))).toBe("invalid");
    expect(bad((b) => b.writeUInt16BE(60_000, 14))).toBe("invalid");
    expect(bad((b) => (b[3] = 0x0b))).toBe("invalid");
  });
});
