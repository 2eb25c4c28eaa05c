import net from "node:net";
import { wireguardKeyFromHex, wireguardKeyHex } from "@fleet/shared";
import type { WireguardDeviceState, WireguardPeerBatch, WireguardPeerState } from "./wireguard-device.ts";

/** Where wireguard-go listens for the cross-platform UAPI protocol; one directory for all namespaces. */
export const UAPI_SOCKET_DIR = "/var/run/wireguard";
export const uapiSocketPath = (name: string): string => `${UAPI_SOCKET_DIR}/${name}.sock`;

const REQUEST_TIMEOUT_MS = 30_000;

/** A UAPI answer that ends in a non-zero `errno`. */
export class UapiError extends Error {
  readonly errno: number;
  constructor(errno: number, operation: string) {
    super(`WireGuard UAPI ${operation} failed with errno=${errno}`);
    this.name = "UapiError";
    this.errno = errno;
  }
}

/**
 * One request over the interface's UAPI socket (`get=1` or `set=1`, lines `key=value`, ending
 * with an empty line), answered by lines ending in `errno=N` and an empty line. Plain node:net: no
 * process per request, and a whole peer set is one request.
 */
export const uapiRequest = (socketPath: string, request: string, timeoutMs = REQUEST_TIMEOUT_MS): Promise<string> =>
  new Promise((resolve, reject) => {
    const socket = net.createConnection(socketPath);
    const chunks: Buffer[] = [];
    let size = 0;
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`WireGuard UAPI at ${socketPath} did not answer within ${timeoutMs} ms`));
    }, timeoutMs);
    const finish = (error?: Error) => {
      clearTimeout(timer);
      socket.destroy();
      if (error) reject(error);
      else resolve(Buffer.concat(chunks, size).toString("utf8"));
    };
    socket.on("error", (error) => finish(error));
    socket.on("data", (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      // The answer ends with an empty line after errno=N.
      const tail = Buffer.concat(chunks.slice(-2)).toString("utf8");
      if (/errno=-?\d+\n\n$/.test(tail)) finish();
    });
    socket.on("end", () => finish());
    socket.on("connect", () => socket.write(request));
  });

const errnoOf = (answer: string): number => {
  const match = /errno=(-?\d+)\n\n?$/.exec(answer);
  return match ? Number(match[1]) : Number.NaN;
};

/** Parses a `get=1` answer. */
export const parseUapiGet = (answer: string): WireguardDeviceState => {
  const errno = errnoOf(answer);
  if (errno !== 0) throw new UapiError(errno, "get");
  const state: WireguardDeviceState = { publicKey: null, listenPort: 0, peers: [] };
  let peer: (WireguardPeerState & { sec: number; nsec: number }) | undefined;
  const flush = () => {
    if (!peer) return;
    const { sec, nsec, ...rest } = peer;
    state.peers.push({
      ...rest,
      lastHandshakeAt: sec > 0 || nsec > 0 ? new Date(sec * 1000 + Math.floor(nsec / 1e6)) : null,
    });
    peer = undefined;
  };
  for (const line of answer.split("\n")) {
    const eq = line.indexOf("=");
    if (eq < 1) continue;
    const key = line.slice(0, eq);
    const value = line.slice(eq + 1);
    switch (key) {
      case "listen_port":
        state.listenPort = Number(value);
        break;
      case "public_key":
        flush();
        peer = {
          publicKey: wireguardKeyFromHex(value),
          allowedIps: [],
          lastHandshakeAt: null,
          endpoint: null,
          sec: 0,
          nsec: 0,
        };
        break;
      case "allowed_ip":
        peer?.allowedIps.push(value);
        break;
      case "endpoint":
        if (peer) peer.endpoint = value;
        break;
      case "last_handshake_time_sec":
        if (peer) peer.sec = Number(value);
        break;
      case "last_handshake_time_nsec":
        if (peer) peer.nsec = Number(value);
        break;
      default:
        break;
    }
  }
  flush();
  return state;
};

const ENDPOINT = /^(?:\d{1,3}(?:\.\d{1,3}){3}|\[[0-9A-Fa-f:.]+\]):\d{1,5}$/;

/** `ip:port` or `[ipv6]:port`, nothing else: a stored endpoint never becomes another UAPI line. */
export const checkedEndpoint = (endpoint: string): string => {
  if (!ENDPOINT.test(endpoint)) throw new RangeError(`not a WireGuard endpoint: ${JSON.stringify(endpoint)}`);
  return endpoint;
};

/** The `set=1` request of a batch: removals, then puts with their allowed IPs replaced. */
export const uapiSetRequest = (
  batch: WireguardPeerBatch,
  device?: { privateKey: string; listenPort: number },
): string => {
  const lines = ["set=1"];
  if (device) {
    lines.push(`private_key=${wireguardKeyHex(device.privateKey)}`, `listen_port=${device.listenPort}`);
  }
  if (batch.replace) lines.push("replace_peers=true");
  for (const key of batch.remove) lines.push(`public_key=${wireguardKeyHex(key)}`, "remove=true");
  for (const peer of batch.put) {
    lines.push(`public_key=${wireguardKeyHex(peer.publicKey)}`);
    if (peer.endpoint) lines.push(`endpoint=${checkedEndpoint(peer.endpoint)}`);
    lines.push("replace_allowed_ips=true");
    for (const ip of peer.allowedIps) lines.push(`allowed_ip=${ip}`);
  }
  return `${lines.join("\n")}\n\n`;
};

export const uapiGet = async (socketPath: string): Promise<WireguardDeviceState> =>
  parseUapiGet(await uapiRequest(socketPath, "get=1\n\n"));

export const uapiSet = async (socketPath: string, request: string): Promise<void> => {
  const errno = errnoOf(await uapiRequest(socketPath, request));
  if (errno !== 0) throw new UapiError(errno, "set");
};
