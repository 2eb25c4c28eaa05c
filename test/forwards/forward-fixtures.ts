import { once } from "node:events";
import net from "node:net";
import { eventually } from "@fleet/shared/testing";
import { proxyV1Header, proxyV2Header } from "@fleet/tunnel-agent";

/** A TCP port free on every given loopback address right now (bind one, probe the rest). */
export const freePortOn = async (hosts: string[]): Promise<number> => {
  for (let attempt = 0; attempt < 20; attempt++) {
    const first = net.createServer();
    first.listen(0, hosts[0]);
    await once(first, "listening");
    const port = (first.address() as net.AddressInfo).port;
    await new Promise((resolve) => first.close(resolve));
    let free = true;
    for (const host of hosts) {
      const probe = net.createServer();
      const ok = await new Promise<boolean>((resolve) => {
        probe.once("error", () => resolve(false));
        probe.listen(port, host, () => resolve(true));
      });
      if (ok) await new Promise((resolve) => probe.close(resolve));
      free &&= ok;
    }
    if (free) return port;
  }
  throw new Error("no common free port");
};

export interface ClientConnection {
  socket: net.Socket;
  /** Everything received until the connection closes. */
  received: Promise<Buffer>;
}

/** Connects to the entry point as `source` (presented with a PROXY header, since tests use loopback only). */
export const connectAs = async (
  port: number,
  source: string,
  options: { version?: 1 | 2; host?: string; payload?: string } = {},
): Promise<ClientConnection> => {
  const host = options.host ?? "127.0.0.1";
  const socket = net.connect({ host, port });
  const chunks: Buffer[] = [];
  socket.on("data", (c: Buffer) => chunks.push(c));
  socket.on("error", () => undefined);
  const received = new Promise<Buffer>((resolve) => socket.on("close", () => resolve(Buffer.concat(chunks))));
  await once(socket, "connect");
  const make = options.version === 2 ? proxyV2Header : proxyV1Header;
  socket.write(
    Buffer.concat([
      make({ address: source, port: 40_123 }, { address: host, port }),
      Buffer.from(options.payload ?? ""),
    ]),
  );
  return { socket, received };
};

/** Writes `text` and reads until as many bytes came back (an echo device behind the router). */
export const echo = async (socket: net.Socket, text: string): Promise<string> => {
  let got = "";
  const onData = (c: Buffer) => {
    got += c.toString();
  };
  socket.on("data", onData);
  socket.write(text);
  await eventually(() => got.length >= text.length || socket.destroyed, "echo");
  socket.off("data", onData);
  return got;
};

/** The error code of a fresh connection attempt (ECONNREFUSED once a listener is gone), or "connected". */
export const connectOutcome = async (port: number, host = "127.0.0.1"): Promise<string> => {
  const socket = net.connect({ host, port });
  try {
    return await new Promise<string>((resolve) => {
      socket.once("connect", () => resolve("connected"));
      socket.once("error", (e: NodeJS.ErrnoException) => resolve(e.code ?? "error"));
    });
  } finally {
    socket.destroy();
  }
};
