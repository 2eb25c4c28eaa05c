import { once } from "node:events";
import net from "node:net";
import type { ForwardConnectionEvent } from "@fleet/db";
import { ManualClock } from "@fleet/shared";
import { eventually } from "@fleet/shared/testing";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { ConnectionLog } from "./connection-log.ts";
import { EntryPointRelay } from "./relay.ts";

const logger = pino({ level: "silent" });
const FORWARD = "0b6f1c1e-1111-4222-8333-444455556666";
const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

/** The router's side (on the forward's port at the tunnel address): echoes what it gets. */
const startEcho = async (port: number) => {
  const server = net.createServer((socket) => {
    socket.on("error", () => undefined);
    socket.pipe(socket);
  });
  server.listen(port, "127.0.0.7");
  await once(server, "listening");
  cleanups.push(() => new Promise((resolve) => server.close(resolve)));
};

const relayWith = async (store: ConnectionLog, allow: string) => {
  const relay = new EntryPointRelay({ bind: "127.0.0.1", proxyProtocol: false, logger, events: store });
  cleanups.push(() => relay.close());
  const probe = net.createServer();
  probe.listen(0, "127.0.0.1");
  await once(probe, "listening");
  const port = (probe.address() as net.AddressInfo).port;
  await new Promise((resolve) => probe.close(resolve));
  await startEcho(port);
  await relay.sync([
    { id: FORWARD, port, allowOnlyCidr: allow, tunnelIp: "127.0.0.7", expiresAt: new Date(Date.now() + 60_000) },
  ]);
  return { relay, port };
};

describe("relay connection log", () => {
  it("records an accepted connection at close, with bytes each way and its source", async () => {
    const written: ForwardConnectionEvent[][] = [];
    const log = new ConnectionLog({
      store: { recordForwardEvents: async (events) => void written.push([...events]) },
      clock: new ManualClock(Date.UTC(2026, 10, 23, 10, 0, 0)),
      logger,
      flushIntervalMs: 60_000,
    });
    cleanups.push(() => log.close());
    const { port } = await relayWith(log, "127.0.0.1/32");
    const client = net.connect({ host: "127.0.0.1", port });
    await once(client, "connect");
    client.write("hello");
    await once(client, "data");
    client.end();
    await once(client, "close");
    // The relay records the connection once its router side closes too, just after the client's.
    await eventually(async () => {
      await log.flush();
      return written.flat().some((e) => e.action === "forward.connection.accepted");
    }, "the accepted connection's entry");
    const accepted = written.flat().filter((e) => e.action === "forward.connection.accepted");
    expect(accepted).toEqual([
      expect.objectContaining({
        forwardId: FORWARD,
        sourceIp: "127.0.0.1",
        details: expect.objectContaining({ source_ip: "127.0.0.1", bytes_in: 5, bytes_out: 5 }),
      }),
    ]);
    expect(typeof accepted[0]?.details.duration_s).toBe("number");
  });

  it("a denied source is recorded; a store that never answers holds no connection", async () => {
    let calls = 0;
    const seen: ForwardConnectionEvent[] = [];
    const log = new ConnectionLog({
      store: {
        recordForwardEvents: (events) => {
          calls++;
          seen.push(...events);
          return new Promise<void>(() => undefined);
        },
      },
      clock: new ManualClock(),
      logger,
      flushIntervalMs: 60_000,
    });
    const { port } = await relayWith(log, "10.9.9.9/32");
    const refused = net.connect({ host: "127.0.0.1", port });
    refused.on("error", () => undefined);
    await once(refused, "close");
    void log.flush();
    expect(calls).toBe(0); // the flush starts on a microtask, after this line
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls).toBe(1);
    expect(seen).toEqual([
      expect.objectContaining({
        forwardId: FORWARD,
        action: "forward.connection.denied",
        sourceIp: "127.0.0.1",
        details: { source_ip: "127.0.0.1", reason: "source outside allow_only_cidr" },
      }),
    ]);
    // The database is stuck; the relay still refuses and records at once.
    const again = net.connect({ host: "127.0.0.1", port });
    again.on("error", () => undefined);
    await once(again, "close");
  });
});
