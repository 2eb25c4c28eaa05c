/**
 * Child process of `npm run bench:relay`: one simulated router (RouterOS SSH server whose dst-nat
 * rules relay `tunnel_ip:port` to the LAN). Its LAN is the parent's sink (dst port 9) and echo
 * (any other port). Prints "ready" on stdout once listening.
 */
import { startRouterOsSshServer } from "@fleet/router-simulator/routeros/routeros-ssh-server";

const [tunnelIp = "", sshPort = "0", sinkPort = "0", echoPort = "0"] = process.argv.slice(2);
const server = await startRouterOsSshServer({
  host: tunnelIp,
  port: Number(sshPort),
  lan: (_address, port) => ({ host: "127.0.0.1", port: Number(port === 9 ? sinkPort : echoPort) }),
});
process.stdout.write("ready\n");
process.once("SIGTERM", () => {
  void server.close().then(() => process.exit(0));
});
