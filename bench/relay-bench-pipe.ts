/**
 * Child process of `npm run bench:relay`: the plainest TCP pipe Node can do (accept, connect,
 * `pipe` both ways), as a control for what one relaying process costs on this machine.
 * Prints its port on stdout.
 */
import net from "node:net";

const target = Number(process.argv[2]);
const server = net.createServer({ allowHalfOpen: true }, (client) => {
  const upstream = net.connect({ host: "127.0.0.1", port: target, allowHalfOpen: true });
  client.pipe(upstream);
  upstream.pipe(client);
  client.on("error", () => upstream.destroy());
  upstream.on("error", () => client.destroy());
});
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`${(server.address() as net.AddressInfo).port}\n`);
});
process.once("SIGTERM", () => process.exit(0));
