import net from "node:net";

/** Whether a router answers at its tunnel address (`tunnel_status`; docs/routeros.md "The management tunnel"). */
export type TunnelProbe = (tunnelIp: string) => Promise<boolean>;

/**
 * A TCP connection to the router's service port at its tunnel address. The hub routes that address
 * only into the tunnel, to the peer whose key is bound to it, and WireGuard accepts an answer from
 * that address only from that peer: an accepted connection, or a refusal (a TCP reset: the port is
 * closed, the router still answered), proves that the device holding the key has the address. A
 * router that bound someone else's key never answers: the key's real holder does not have it.
 */
export const tcpTunnelProbe =
  (o: { port: number; timeoutMs?: number }): TunnelProbe =>
  (tunnelIp) =>
    new Promise((resolve) => {
      const socket = net.connect({ host: tunnelIp, port: o.port });
      const done = (answered: boolean) => {
        clearTimeout(timer);
        socket.destroy();
        resolve(answered);
      };
      const timer = setTimeout(() => done(false), o.timeoutMs ?? 3_000);
      socket.once("connect", () => done(true));
      socket.once("error", (error: NodeJS.ErrnoException) => done(error.code === "ECONNREFUSED"));
    });
