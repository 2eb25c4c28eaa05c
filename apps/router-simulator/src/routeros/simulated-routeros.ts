import { once } from "node:events";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import http from "node:http";
import net from "node:net";
import path from "node:path";
import { type ConfigurationTables, type RouterOsSshServer, startRouterOsSshServer } from "./routeros-ssh-server.ts";
import { generateEd25519KeyPair } from "@fleet/shared";

/**
 * One simulated router's RouterOS side (docs/routeros.md "Simulator"): the SSH server on its tunnel_ip that
 * understands the agent's commands, and a simulated LAN behind it: an echo device and a small
 * HTTP device (ports 80, 443, 8080, 8291 and 8728 reach the HTTP device, every other port the echo
 * device), whatever the `dst_address` inside the LAN.
 */
export interface SimulatedRouterOsOptions {
  /** The router's tunnel_ip (127.0.0.x in tests and demos). */
  tunnelIp: string;
  /** TUNNEL_SSH_PORT of the agent. */
  sshPort: number;
  /** TUNNEL_SSH_USER of the agent; any user when absent. */
  sshUser?: string;
  /** OpenSSH public keys allowed in; any correctly signed key when empty. */
  authorizedKeys?: string[];
  /** Decides logins from the router's own users and keys (an adopted router); overrides the two above. */
  authorize?: (username: string, publicKey: Buffer, address: string) => boolean;
  /** An adopted router's configuration tables, which offboarding empties of what adoption installed. */
  configuration?: ConfigurationTables;
  /** Host key; generated when absent. Use {@link loadOrCreateHostKey} to keep it across runs. */
  hostKey?: string;
  /** Delay before each command is answered (a slow router). */
  commandDelayMs?: number;
  /** What `/export terse` answers instead of the simulated configuration (a hostile router in tests). */
  exportText?: (standard: string) => string;
  /** Where the LAN devices listen (default 127.0.0.1). */
  lanHost?: string;
  /** The router's public address (another loopback address in tests): unpinned rules open here too. */
  wanAddress?: string;
  /** An adopted router's script interpreter: fleet changes run here (RouterOsSshServerOptions.script). */
  script?: (text: string) => Promise<string>;
  /** False while the router reboots or has lost its tunnel. */
  reachable?: () => boolean;
}

export interface SimulatedLan {
  echoPort: number;
  httpPort: number;
  /** Connections the LAN devices accepted, and bytes they received, since start. */
  connections(): number;
  bytesReceived(): number;
}

export interface SimulatedRouterOs {
  tunnelIp: string;
  ssh: RouterOsSshServer;
  lan: SimulatedLan;
  close(): Promise<void>;
}

const HTTP_PORTS = new Set([80, 443, 8080, 8291, 8728]);

const listen = async (server: net.Server, host: string): Promise<number> => {
  server.listen(0, host);
  await once(server, "listening");
  return (server.address() as net.AddressInfo).port;
};

export const startSimulatedRouterOs = async (options: SimulatedRouterOsOptions): Promise<SimulatedRouterOs> => {
  const lanHost = options.lanHost ?? "127.0.0.1";
  let connections = 0;
  let received = 0;
  const sockets = new Set<net.Socket>();
  const track = (socket: net.Socket) => {
    connections++;
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => socket.destroy());
    socket.on("data", (chunk: Buffer) => {
      received += chunk.length;
    });
  };
  const echo = net.createServer({ allowHalfOpen: true }, (socket) => {
    track(socket);
    socket.pipe(socket);
  });
  const web = http.createServer((req, res) => {
    req.resume();
    res.setHeader("content-type", "text/plain");
    res.end(`simulated LAN device behind ${options.tunnelIp}: ${req.method} ${req.url}\n`);
  });
  web.on("connection", track);
  const echoPort = await listen(echo, lanHost);
  const httpPort = await listen(web, lanHost);

  const closeLan = async () => {
    for (const socket of sockets) socket.destroy();
    web.closeAllConnections();
    await Promise.all([new Promise((r) => echo.close(r)), new Promise((r) => web.close(r))]);
  };
  let ssh: RouterOsSshServer;
  try {
    ssh = await startRouterOsSshServer({
      host: options.tunnelIp,
      port: options.sshPort,
      lan: (_address, port) => ({ host: lanHost, port: HTTP_PORTS.has(port) ? httpPort : echoPort }),
      ...(options.hostKey ? { hostKey: options.hostKey } : {}),
      ...(options.authorizedKeys ? { authorizedKeys: options.authorizedKeys } : {}),
      ...(options.sshUser ? { username: options.sshUser } : {}),
      ...(options.authorize ? { authorize: options.authorize } : {}),
      ...(options.configuration ? { configuration: options.configuration } : {}),
      ...(options.commandDelayMs ? { commandDelayMs: options.commandDelayMs } : {}),
      ...(options.exportText ? { exportText: options.exportText } : {}),
      ...(options.wanAddress ? { wanAddress: options.wanAddress } : {}),
      ...(options.script ? { script: options.script } : {}),
      ...(options.reachable ? { reachable: options.reachable } : {}),
    });
  } catch (error) {
    await closeLan();
    throw error;
  }

  return {
    tunnelIp: options.tunnelIp,
    ssh,
    lan: { echoPort, httpPort, connections: () => connections, bytesReceived: () => received },
    close: async () => {
      await ssh.close();
      await closeLan();
    },
  };
};

/**
 * A host key kept in `file`, created on first use: a simulator restarted on the same tunnel_ip
 * presents the same key, so the agent's pin (trust on first use) still holds.
 */
export const loadOrCreateHostKey = (file: string): string => {
  try {
    return readFileSync(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  mkdirSync(path.dirname(file), { recursive: true });
  const key = generateEd25519KeyPair().private;
  writeFileSync(file, key, { mode: 0o600 });
  return key;
};
