import { startTestTunnelAgent } from "@fleet/tunnel-agent/testing";
/**
 * Child process of `npm run bench:relay`: the tunnel agent with its entry-point relay over an
 * in-memory database holding one router (at the simulated router's tunnel_ip, inside
 * `TUNNEL_NETWORK`, default all of loopback) and two forwards:
 * to the LAN sink (dst port 9) and to the LAN echo (dst port 7). Applies both through the real job
 * queue and SSH, then prints `{"sink": port, "echo": port}` on stdout.
 */
import { acquireJobEngine, openDatabase, routerJobsQueue } from "@fleet/db";
import { makeForward, makeRouter, makeUser } from "@fleet/db/testing";
import { loadTunnelAgentConfig } from "@fleet/tunnel-agent";
import pino from "pino";

const [tunnelIp = "", sshPort = "0", network = "127.0.0.0/8", portRange = "49500-49599"] = process.argv.slice(2);
const ENTRY = "bench.fleet.test";
const PORTS = portRange.split("-").map(Number) as [number, number];

const db = await openDatabase({ dataDir: "memory" });
await db.migrate();
const user = await makeUser(db);
const router = await makeRouter(db, user, { tunnelIp });
// Forwards queue their router jobs through the job engine (the agent below shares this one).
const jobs = await acquireJobEngine(db);
await jobs.defineQueue(routerJobsQueue());
const create = (dstPort: number) =>
  makeForward(db, jobs, {
    routerId: router.id,
    entryPoint: ENTRY,
    ports: PORTS,
    dstAddress: "192.168.88.10",
    dstPort,
    expiresAt: new Date(Date.now() + 3_600_000),
  });
const sink = await create(9);
const echo = await create(7);
const agent = await startTestTunnelAgent({
  config: loadTunnelAgentConfig({
    DATA_DIR: "memory",
    ENTRY_POINT_HOST: ENTRY,
    ENTRY_POINT_BIND: "127.0.0.1",
    ENTRY_POINT_PORTS: PORTS.join("-"),
    ENTRY_POINT_PROXY_PROTOCOL: "true",
    TUNNEL_SSH_PORT: sshPort,
    // A loopback address (the plain bench), or the tunnel's network (`--tunnel`: routed to the
    // bench's WireGuard hub interface, as TUNNEL_MODE=wireguard routes it).
    TUNNEL_NETWORK: network,
  }),
  db,
  logger: pino({ level: "warn" }),
});
const deadline = Date.now() + 30_000;
while (
  agent.relay.listening().length < 2 ||
  (await db.query("select 1 from forwards where applied_at is null")).length > 0
) {
  if (Date.now() > deadline) throw new Error("forwards were not applied in time");
  await new Promise((resolve) => setTimeout(resolve, 50));
}
process.stdout.write(`${JSON.stringify({ sink: sink.port, echo: echo.port })}\n`);
process.once("SIGTERM", () => {
  void agent
    .close()
    .then(() => jobs.stop())
    .then(() => db.close())
    .then(() => process.exit(0));
});
