import { connect, type Socket } from "node:net";

/**
 * A child process that holds idle, slow and probing connections to the heartbeat port without a
 * token (the attack of docs/api.md "Routers and heartbeats": the port serves routers first), so the
 * daemon under test does not share its event loop with the attacker. Started with `fork` by
 * connection-guard.test.ts; it sends `{ held, opened }` whenever the parent sends "count", and
 * `{ ready }` once every connection was tried. Loopback only.
 *
 * argv: <port> <count> <addresses>: connections spread over 127.0.<1..addresses>.1.
 * A third of them send nothing, a third send headers one byte per 100 ms and never finish, a third
 * send one `GET /livez` (kept alive) and then stay idle.
 */
const [port, count, addresses] = process.argv.slice(2).map(Number);
if (!port || !count || !addresses) throw new Error("usage: idle-connections <port> <count> <addresses>");

const open = new Set<Socket>();
const slow = new Set<Socket>();
let opened = 0;

const one = (i: number) =>
  new Promise<void>((resolve) => {
    const socket = connect({ host: "127.0.0.1", port, localAddress: `127.0.${1 + (i % addresses)}.1` });
    socket.on("error", () => {});
    socket.resume();
    socket.once("close", () => {
      open.delete(socket);
      slow.delete(socket);
      resolve();
    });
    socket.once("connect", () => {
      opened += 1;
      open.add(socket);
      if (i % 3 === 1) {
        socket.write("POST /v1/heartbeat HTTP/1.1\r\nHost: hb\r\nX-Slow: ");
        slow.add(socket);
      } else if (i % 3 === 2) socket.write("GET /livez HTTP/1.1\r\nHost: hb\r\n\r\n");
      resolve();
    });
  });

const drip = setInterval(() => {
  for (const socket of slow) socket.write("a");
}, 100);

process.on("message", (message) => {
  if (message === "count") process.send?.({ held: open.size, opened });
  if (message === "stop") {
    clearInterval(drip);
    for (const socket of open) socket.destroy();
    process.disconnect();
  }
});

for (let i = 0; i < count; i += 100) {
  await Promise.all(Array.from({ length: Math.min(100, count - i) }, (_, j) => one(i + j)));
}
process.send?.({ ready: true, held: open.size, opened });
