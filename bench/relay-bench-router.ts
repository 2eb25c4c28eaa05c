/**
 * Child process of `npm run bench:relay`: one simulated router (RouterOS SSH server whose dst-nat
 * rules relay `tunnel_ip:port` to the LAN). Its LAN is the parent's sink (dst port 9) and echo
 * (any other port), or, with sink and echo ports 0 (`--tunnel`: the router runs in its own network
 * namespace, where the parent's loopback is out of reach), a sink and an echo of its own, which
 * answer like the parent's. Prints "ready" on stdout once listening.
 */
import { once } from "node:events";
import net from "node:net";
import { startRouterOsSshServer } from "@fleet/router-simulator/routeros/routeros-ssh-server";

const [tunnelIp = "", sshPort = "0", sinkArg = "0", echoArg = "0"] = process.argv.slice(2);

const ownLan = async (): Promise<{ sink: number; echo: number }> => {
  const sink = net.createServer({ allowHalfOpen: true }, (socket) => {
    let n = 0;
    socket.on("data", (chunk: Buffer) => {
      n += chunk.length;
    });
    socket.on("end", () => socket.end(String(n)));
    socket.on("error", () => socket.destroy());
  });
  const echo = net.createServer((socket) => {
    socket.on("error", () => socket.destroy());
    socket.pipe(socket);
  });
  const listen = async (server: net.Server) => {
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    return (server.address() as net.AddressInfo).port;
  };
  return { sink: await listen(sink), echo: await listen(echo) };
};

const lan = sinkArg === "0" ? await ownLan() : { sink: Number(sinkArg), echo: Number(echoArg) };
const server = await startRouterOsSshServer({
  host: tunnelIp,
  port: Number(sshPort),
  lan: (_address, port) => ({ host: "127.0.0.1", port: port === 9 ? lan.sink : lan.echo }),
});
process.stdout.write("ready\n");
process.once("SIGTERM", () => {
  void server.close().then(() => process.exit(0));
});
