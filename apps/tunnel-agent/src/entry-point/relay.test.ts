import { createHash, randomBytes } from "node:crypto";
import { once } from "node:events";
import net from "node:net";
import type { RelayTarget } from "@fleet/db";
import { renderMetrics } from "@fleet/runtime";
import { eventually } from "@fleet/shared/testing";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { proxyV1Header, proxyV2Header } from "./proxy-protocol.ts";
import { EntryPointRelay } from "./relay.ts";

const ENTRY = "127.0.0.1";
const TUNNEL = "127.0.0.7";
const logger = pino({ level: "silent" });
const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

const freeOnEntry = (port: number) =>
  new Promise<boolean>((resolve) => {
    const probe = net.createServer();
    probe.once("error", () => resolve(false));
    probe.listen(port, ENTRY, () => probe.close(() => resolve(true)));
  });

/** A stand-in for the router's tunnel side: counts connections and bytes, echoes or sinks. */
const startRouter = async (mode: "echo" | "sink" = "echo") => {
  const seen = { connections: 0, bytes: 0, hash: createHash("sha256") };
  const sockets = new Set<net.Socket>();
  const server = net.createServer({ allowHalfOpen: true }, (socket) => {
    seen.connections++;
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => undefined);
    if (mode === "echo") {
      socket.pipe(socket);
      return;
    }
    socket.on("data", (chunk: Buffer) => {
      seen.bytes += chunk.length;
      seen.hash.update(chunk);
    });
    socket.on("end", () => socket.end(`${seen.bytes}`));
  });
  // The relay listens on ENTRY at the router's port number: take a number free on both addresses,
  // or the relay's bind fails and the client reaches whatever else holds ENTRY:port.
  for (let attempt = 1; ; attempt++) {
    server.listen(0, TUNNEL);
    await once(server, "listening");
    if (await freeOnEntry((server.address() as net.AddressInfo).port)) break;
    await new Promise((resolve) => server.close(resolve));
    if (attempt === 50) throw new Error("no port free on both loopback addresses");
  }
  cleanups.push(() => {
    for (const s of sockets) s.destroy();
    return new Promise((resolve) => server.close(resolve));
  });
  return { port: (server.address() as net.AddressInfo).port, seen, sockets };
};

const startRelay = async (proxyProtocol: boolean, target: Omit<RelayTarget, "tunnelIp" | "expiresAt">) => {
  const relay = new EntryPointRelay({ bind: ENTRY, proxyProtocol, logger, headerTimeoutMs: 300 });
  cleanups.push(() => relay.close());
  await relay.sync([{ ...target, tunnelIp: TUNNEL, expiresAt: new Date(Date.now() + 3_600_000) }]);
  return relay;
};

const connect = async (port: number, first?: Buffer) => {
  const socket = net.connect({ host: ENTRY, port });
  cleanups.push(() => socket.destroy());
  await once(socket, "connect");
  if (first) socket.write(first);
  return socket;
};

/** Everything the socket receives until the relay or the router closes it. */
const readAll = (socket: net.Socket) =>
  new Promise<Buffer>((resolve) => {
    const chunks: Buffer[] = [];
    socket.on("data", (c: Buffer) => chunks.push(c));
    socket.on("error", () => undefined);
    socket.on("close", () => resolve(Buffer.concat(chunks)));
  });

const roundTrip = async (socket: net.Socket, text: string) => {
  socket.write(text);
  let got = "";
  while (got.length < text.length) got += ((await once(socket, "data")) as [Buffer])[0].toString();
  return got;
};

const FORWARD = "0b6f1c1e-1111-4222-8333-444455556666";

/** One sample of the process's metrics (docs/operations.md "Metrics and probes"). */
const metric = async (series: string) => {
  const text = (await renderMetrics(undefined, undefined)).body;
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
};

describe("EntryPointRelay", () => {
  it("pipes an allowed source to the router and back, half-close included", async () => {
    const router = await startRouter();
    const relay = await startRelay(false, { id: FORWARD, port: router.port, allowOnlyCidr: "127.0.0.1/32" });
    expect(relay.listening()).toEqual([{ id: FORWARD, port: router.port }]);
    const socket = await connect(router.port);
    expect(await roundTrip(socket, "ping")).toBe("ping");
    const rest = readAll(socket);
    socket.end("last words");
    expect((await rest).toString()).toBe("last words");
    expect(relay.stats(FORWARD)).toEqual({ accepted: 1, refused: 0 });
  });

  it("counts accepted connections and the bytes of finished ones in the process metrics", async () => {
    const before = {
      accepted: await metric('fleet_relay_connections_total{result="accepted"}'),
      in: await metric('fleet_relay_bytes_total{direction="in"}'),
      out: await metric('fleet_relay_bytes_total{direction="out"}'),
    };
    const router = await startRouter();
    await startRelay(false, { id: FORWARD, port: router.port, allowOnlyCidr: "127.0.0.1/32" });
    const socket = await connect(router.port);
    expect(await roundTrip(socket, "ping")).toBe("ping");
    const rest = readAll(socket);
    socket.end("last words");
    await rest;
    await eventually(
      async () => (await metric('fleet_relay_bytes_total{direction="in"}')) !== before.in,
      "the closed connection's bytes counted",
    );
    expect((await metric('fleet_relay_connections_total{result="accepted"}')) - before.accepted).toBe(1);
    expect((await metric('fleet_relay_bytes_total{direction="in"}')) - before.in).toBe(14);
    expect((await metric('fleet_relay_bytes_total{direction="out"}')) - before.out).toBe(14);
  });

  it("cuts a source outside allow_only_cidr before connecting to the router", async () => {
    const router = await startRouter();
    const relay = await startRelay(false, { id: FORWARD, port: router.port, allowOnlyCidr: "8.8.8.0/24" });
    const denied = await metric('fleet_relay_connections_total{result="denied"}');
    const socket = await connect(router.port, Buffer.from("secret"));
    expect((await readAll(socket)).length).toBe(0);
    expect(router.seen.connections).toBe(0);
    expect(relay.stats(FORWARD)).toEqual({ accepted: 0, refused: 1 });
    expect((await metric('fleet_relay_connections_total{result="denied"}')) - denied).toBe(1);
  });

  it.each([
    ["v1", proxyV1Header],
    ["v2", proxyV2Header],
  ])("with PROXY %s, checks the header's source and forwards only what follows the header", async (_v, header) => {
    const router = await startRouter("sink");
    const relay = await startRelay(true, { id: FORWARD, port: router.port, allowOnlyCidr: "8.8.8.0/24" });
    const allowed = await connect(router.port);
    const reply = readAll(allowed);
    // Header and payload in one write, split at an awkward place: both must be handled.
    const bytes = Buffer.concat([
      header({ address: "8.8.8.42", port: 5555 }, { address: ENTRY, port: router.port }),
      Buffer.from("payload"),
    ]);
    allowed.write(bytes.subarray(0, 5));
    allowed.end(bytes.subarray(5));
    expect((await reply).toString()).toBe("7");
    expect(router.seen.hash.digest("hex")).toBe(createHash("sha256").update("payload").digest("hex"));

    const denied = await connect(
      router.port,
      header({ address: "9.9.9.9", port: 5555 }, { address: ENTRY, port: router.port }),
    );
    denied.write("payload");
    expect((await readAll(denied)).length).toBe(0);
    expect(router.seen.connections).toBe(1);
    expect(relay.stats(FORWARD)).toEqual({ accepted: 1, refused: 1 });
  });

  it("audits a connection that reached the router with the client's own bytes, the PROXY header not counted", async () => {
    const router = await startRouter("sink");
    const accepted: Array<{ sourceIp: string; bytesIn: number; bytesOut: number }> = [];
    const relay = new EntryPointRelay({
      bind: ENTRY,
      proxyProtocol: true,
      logger,
      headerTimeoutMs: 300,
      events: { accepted: (e) => accepted.push(e), denied: () => undefined },
    });
    cleanups.push(() => relay.close());
    await relay.sync([
      {
        id: FORWARD,
        port: router.port,
        allowOnlyCidr: "8.8.8.0/24",
        tunnelIp: TUNNEL,
        expiresAt: new Date(Date.now() + 3_600_000),
      },
    ]);
    const socket = await connect(router.port);
    const reply = readAll(socket);
    socket.end(
      Buffer.concat([
        proxyV1Header({ address: "8.8.8.42", port: 5555 }, { address: ENTRY, port: router.port }),
        Buffer.from("payload"),
      ]),
    );
    expect((await reply).toString()).toBe("7");
    await eventually(() => accepted.length === 1, "one accepted connection");
    expect(accepted[0]).toMatchObject({ sourceIp: "8.8.8.42", bytesIn: 7, bytesOut: 1 });
  });

  it("does not audit an admitted connection whose router cannot be reached (nothing was forwarded)", async () => {
    // A port nobody listens on at the tunnel address: the upstream connect is refused.
    const closed = net.createServer();
    closed.listen(0, TUNNEL);
    await once(closed, "listening");
    const port = (closed.address() as net.AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const events: string[] = [];
    const relay = new EntryPointRelay({
      bind: ENTRY,
      proxyProtocol: false,
      logger,
      headerTimeoutMs: 300,
      events: { accepted: () => events.push("accepted"), denied: () => events.push("denied") },
    });
    cleanups.push(() => relay.close());
    await relay.sync([
      {
        id: FORWARD,
        port,
        allowOnlyCidr: "127.0.0.1/32",
        tunnelIp: TUNNEL,
        expiresAt: new Date(Date.now() + 3_600_000),
      },
    ]);
    const socket = await connect(port, Buffer.from("hello"));
    expect((await readAll(socket)).length).toBe(0);
    expect(relay.stats(FORWARD)).toEqual({ accepted: 1, refused: 0 });
    // The relay's bookkeeping of the pair is done when the client side has closed; nothing was reported.
    await eventually(() => relay.connections(FORWARD) === 0, "no open connection");
    expect(events).toEqual([]);
  });

  it("with PROXY on, refuses a missing, malformed, LOCAL or late header", async () => {
    const router = await startRouter();
    const relay = await startRelay(true, { id: FORWARD, port: router.port, allowOnlyCidr: "127.0.0.1/32" });
    const local = proxyV2Header({ address: "127.0.0.1", port: 1 }, { address: ENTRY, port: 2 });
    local[12] = 0x20;
    for (const first of [
      Buffer.from("SSH-2.0-OpenSSH\r\n"),
      Buffer.from("PROXY TCP4 127.1 127.0.0.1 1 2\r\n"),
      local,
    ]) {
      const socket = await connect(router.port, first);
      expect((await readAll(socket)).length).toBe(0);
    }
    const silent = await connect(router.port);
    expect((await readAll(silent)).length).toBe(0);
    expect(router.seen.connections).toBe(0);
    expect(relay.stats(FORWARD)?.refused).toBe(4);
  });

  it("carries a large transfer intact with backpressure", async () => {
    const router = await startRouter("sink");
    await startRelay(false, { id: FORWARD, port: router.port, allowOnlyCidr: "127.0.0.1/32" });
    const data = randomBytes(32 * 1024 * 1024);
    const socket = await connect(router.port);
    const reply = readAll(socket);
    socket.end(data);
    expect((await reply).toString()).toBe(String(data.length));
    expect(router.seen.hash.digest("hex")).toBe(createHash("sha256").update(data).digest("hex"));
  });

  it("closes the listener and every open connection when the forward leaves the active set", async () => {
    const router = await startRouter();
    const relay = await startRelay(false, { id: FORWARD, port: router.port, allowOnlyCidr: "127.0.0.1/32" });
    const open = await connect(router.port);
    expect(await roundTrip(open, "hi")).toBe("hi");
    expect(relay.connections(FORWARD)).toBe(1);
    const ended = readAll(open);
    await relay.sync([]);
    await ended;
    expect(relay.listening()).toEqual([]);
    expect(relay.connections()).toBe(0);
    const refused = net.connect({ host: ENTRY, port: router.port });
    cleanups.push(() => refused.destroy());
    const [error] = (await once(refused, "error")) as [NodeJS.ErrnoException];
    expect(error.code).toBe("ECONNREFUSED");
  });

  it("retries a busy port with backoff: one line when it is busy, one when it finally binds, none per attempt", async () => {
    const holder = net.createServer();
    holder.listen(0, ENTRY);
    await once(holder, "listening");
    const port = (holder.address() as net.AddressInfo).port;
    const lines: Array<{ msg: string; port?: number; forwardId?: string; attempts?: number }> = [];
    const captured = pino({ level: "info" }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const relay = new EntryPointRelay({
      bind: ENTRY,
      proxyProtocol: false,
      logger: captured,
      bindRetryBaseMs: 5,
      bindRetryMaxMs: 20,
    });
    cleanups.push(() => relay.close());
    const target = {
      id: FORWARD,
      port,
      allowOnlyCidr: "127.0.0.0/8",
      tunnelIp: TUNNEL,
      expiresAt: new Date(Date.now() + 3_600_000),
    };
    await relay.sync([target]);
    // The relay sync re-reads forwards every ~500 ms: repeated syncs must not add listeners or lines.
    await eventually(async () => {
      await relay.sync([target]);
      return (relay.pendingBinds()[0]?.failures ?? 0) >= 5;
    }, "five failed binds");
    expect(relay.listening()).toEqual([]);

    await new Promise((resolve) => holder.close(resolve));
    await eventually(() => relay.listening().length > 0, "the port bound once free");
    expect(relay.listening()).toEqual([{ id: FORWARD, port }]);
    expect(relay.pendingBinds()).toEqual([]);
    const about = lines.filter((l) => l.port === port);
    expect(about.map((l) => l.msg)).toEqual([
      "entry-point port busy; retrying with backoff until it is free",
      "entry-point port bound after it was busy",
    ]);
    expect(about[1]?.attempts).toBeGreaterThanOrEqual(6);

    const router = await startRouter();
    await relay.sync([{ ...target, port, tunnelIp: TUNNEL }]);
    expect(router.port).toBeGreaterThan(0);
    const socket = await connect(port);
    socket.destroy();
  });

  it("stops retrying a busy port once its forward is gone", async () => {
    const holder = net.createServer();
    holder.listen(0, ENTRY);
    await once(holder, "listening");
    cleanups.push(() => new Promise((resolve) => holder.close(resolve)));
    const port = (holder.address() as net.AddressInfo).port;
    const relay = new EntryPointRelay({
      bind: ENTRY,
      proxyProtocol: false,
      logger,
      bindRetryBaseMs: 5,
      bindRetryMaxMs: 5,
    });
    cleanups.push(() => relay.close());
    await relay.sync([
      {
        id: FORWARD,
        port,
        allowOnlyCidr: "127.0.0.0/8",
        tunnelIp: TUNNEL,
        expiresAt: new Date(Date.now() + 3_600_000),
      },
    ]);
    await eventually(() => (relay.pendingBinds()[0]?.failures ?? 0) >= 2, "two failed binds");
    await relay.sync([]);
    expect(relay.pendingBinds()).toEqual([]);
    expect(relay.listening()).toEqual([]);
  });
});
