import { isCanonicalIpv4 } from "@fleet/shared";
import ipaddr from "ipaddr.js";

/**
 * PROXY protocol v1 (text) and v2 (binary) headers, as a load balancer in front of the entry point
 * sends them (https://www.haproxy.org/download/2.9/doc/proxy-protocol.txt). Parsing is strict: the
 * source address decides who may use a forward, so anything ambiguous is refused.
 */

export interface ProxyAddress {
  address: string;
  port: number;
}

export type ProxyHeader =
  /** A proxied connection: the real client is `source`. */
  | { command: "proxy"; family: "tcp4" | "tcp6"; source: ProxyAddress; destination: ProxyAddress }
  /** The proxy speaking for itself (health checks), or v1 UNKNOWN / v2 UNSPEC: no client address. */
  | { command: "local" };

export type ProxyParseResult =
  | { status: "incomplete" }
  | { status: "invalid"; reason: string }
  | { status: "ok"; header: ProxyHeader; length: number };

/** v1 lines are at most 107 bytes including CRLF (spec section 2.1). */
export const V1_MAX_LENGTH = 107;
/** v2 addresses plus TLVs; larger headers are refused rather than buffered. */
export const V2_MAX_LENGTH = 16 + 2048;

const V2_SIGNATURE = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]);
const V1_PREFIX = Buffer.from("PROXY ", "ascii");
const PORT = /^(?:0|[1-9]\d{0,4})$/;

const invalid = (reason: string): ProxyParseResult => ({ status: "invalid", reason });

/** True while `buffer` is still a prefix of `expected` (so more bytes may complete it). */
const isPrefixOf = (buffer: Buffer, expected: Buffer): boolean =>
  buffer
    .subarray(0, Math.min(buffer.length, expected.length))
    .equals(expected.subarray(0, Math.min(buffer.length, expected.length)));

const parsePort = (text: string): number | undefined => {
  if (!PORT.test(text)) return undefined;
  const port = Number(text);
  return port <= 65535 ? port : undefined;
};

const isCanonicalIpv6 = (text: string): boolean => {
  try {
    return ipaddr.IPv6.isValid(text) && !text.includes("%");
  } catch {
    return false;
  }
};

const parseV1 = (buffer: Buffer): ProxyParseResult => {
  const end = buffer.indexOf("\r\n", 0, "ascii");
  if (end === -1) {
    return buffer.length >= V1_MAX_LENGTH ? invalid("PROXY v1 line longer than 107 bytes") : { status: "incomplete" };
  }
  if (end + 2 > V1_MAX_LENGTH) return invalid("PROXY v1 line longer than 107 bytes");
  const line = buffer.subarray(0, end).toString("latin1");
  const parts = line.split(" ");
  if (parts[1] === "UNKNOWN") return { status: "ok", header: { command: "local" }, length: end + 2 };
  if (parts.length !== 6) return invalid("PROXY v1 line must have 6 fields");
  const [, proto, src, dst, sport, dport] = parts as [string, string, string, string, string, string];
  const validAddress = proto === "TCP4" ? isCanonicalIpv4 : proto === "TCP6" ? isCanonicalIpv6 : undefined;
  if (!validAddress) return invalid(`PROXY v1 protocol must be TCP4, TCP6 or UNKNOWN`);
  if (!validAddress(src) || !validAddress(dst)) return invalid("PROXY v1 address is not valid");
  const sourcePort = parsePort(sport);
  const destinationPort = parsePort(dport);
  if (sourcePort === undefined || destinationPort === undefined) return invalid("PROXY v1 port is not valid");
  return {
    status: "ok",
    header: {
      command: "proxy",
      family: proto === "TCP4" ? "tcp4" : "tcp6",
      source: { address: src, port: sourcePort },
      destination: { address: dst, port: destinationPort },
    },
    length: end + 2,
  };
};

const ipv6At = (buffer: Buffer, offset: number): string =>
  ipaddr.fromByteArray([...buffer.subarray(offset, offset + 16)]).toString();

const parseV2 = (buffer: Buffer): ProxyParseResult => {
  if (buffer.length < 16) return { status: "incomplete" };
  const versionCommand = buffer[12] ?? 0;
  const familyProtocol = buffer[13] ?? 0;
  const length = buffer.readUInt16BE(14);
  if (versionCommand >> 4 !== 2) return invalid("PROXY v2 version must be 2");
  if (16 + length > V2_MAX_LENGTH) return invalid("PROXY v2 header too long");
  if (buffer.length < 16 + length) return { status: "incomplete" };
  const total = 16 + length;
  const command = versionCommand & 0x0f;
  if (command === 0x0) return { status: "ok", header: { command: "local" }, length: total };
  if (command !== 0x1) return invalid("PROXY v2 command must be LOCAL or PROXY");
  if (familyProtocol === 0x00) return { status: "ok", header: { command: "local" }, length: total };
  if (familyProtocol === 0x11) {
    if (length < 12) return invalid("PROXY v2 IPv4 block too short");
    const source = [...buffer.subarray(16, 20)].join(".");
    const destination = [...buffer.subarray(20, 24)].join(".");
    return {
      status: "ok",
      header: {
        command: "proxy",
        family: "tcp4",
        source: { address: source, port: buffer.readUInt16BE(24) },
        destination: { address: destination, port: buffer.readUInt16BE(26) },
      },
      length: total,
    };
  }
  if (familyProtocol === 0x21) {
    if (length < 36) return invalid("PROXY v2 IPv6 block too short");
    return {
      status: "ok",
      header: {
        command: "proxy",
        family: "tcp6",
        source: { address: ipv6At(buffer, 16), port: buffer.readUInt16BE(48) },
        destination: { address: ipv6At(buffer, 32), port: buffer.readUInt16BE(50) },
      },
      length: total,
    };
  }
  return invalid("PROXY v2 family must be TCP over IPv4 or IPv6");
};

/** Parses the header at the start of `buffer`; `length` is where the client's own bytes begin. */
export const parseProxyHeader = (buffer: Buffer): ProxyParseResult => {
  if (buffer.length === 0) return { status: "incomplete" };
  if (buffer[0] === V2_SIGNATURE[0]) {
    if (!isPrefixOf(buffer, V2_SIGNATURE)) return invalid("not a PROXY protocol header");
    return buffer.length < V2_SIGNATURE.length ? { status: "incomplete" } : parseV2(buffer);
  }
  if (!isPrefixOf(buffer, V1_PREFIX)) return invalid("not a PROXY protocol header");
  return buffer.length < V1_PREFIX.length ? { status: "incomplete" } : parseV1(buffer);
};

/** A v1 header line (tests, the benchmark, and clients that speak for a load balancer). */
export const proxyV1Header = (source: ProxyAddress, destination: ProxyAddress): Buffer =>
  Buffer.from(`PROXY TCP4 ${source.address} ${destination.address} ${source.port} ${destination.port}\r\n`, "latin1");

/** A v2 PROXY header for TCP over IPv4, optionally with raw TLV bytes after the addresses. */
export const proxyV2Header = (
  source: ProxyAddress,
  destination: ProxyAddress,
  tlvs: Buffer = Buffer.alloc(0),
): Buffer => {
  const header = Buffer.alloc(16 + 12);
  V2_SIGNATURE.copy(header, 0);
  header[12] = 0x21;
  header[13] = 0x11;
  header.writeUInt16BE(12 + tlvs.length, 14);
  Buffer.from(source.address.split(".").map(Number)).copy(header, 16);
  Buffer.from(destination.address.split(".").map(Number)).copy(header, 20);
  header.writeUInt16BE(source.port, 24);
  header.writeUInt16BE(destination.port, 26);
  return Buffer.concat([header, tlvs]);
};
