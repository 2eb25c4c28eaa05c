import type { Server as HttpServer } from "node:http";
import type { AddressInfo, Server as NetServer } from "node:net";

export interface ListenOptions {
  host: string;
  /** 0: any free port (tests). */
  port: number;
  /** Several processes on one port (SO_REUSEPORT): each binds exclusively, the kernel spreads connections. */
  reusePort?: boolean;
  /** Bind without the cluster primary's shared handle (a port another process may hold must fail here). */
  exclusive?: boolean;
  /** Connections the kernel queues before they are accepted (capped by net.core.somaxconn); Node's default is 511. */
  backlog?: number;
}

/**
 * Binds `server` and resolves with the bound port. A bind error (EADDRINUSE, EACCES) rejects the
 * promise instead of surfacing later as an unhandled 'error' event. Used by every app that listens.
 */
export const listen = (server: NetServer, options: ListenOptions): Promise<number> =>
  new Promise<number>((resolve, reject) => {
    server.once("error", reject);
    server.listen(
      {
        host: options.host,
        port: options.port,
        ...(options.reusePort ? { reusePort: true, exclusive: true } : {}),
        ...(options.exclusive !== undefined ? { exclusive: options.exclusive } : {}),
        ...(options.backlog !== undefined ? { backlog: options.backlog } : {}),
      },
      () => {
        server.off("error", reject);
        resolve((server.address() as AddressInfo).port);
      },
    );
  });

/** `http://host:port` a client on this machine can use: a wildcard bind is reached on `wildcardAs`. */
export const serverUrl = (host: string, port: number, wildcardAs = "127.0.0.1"): string => {
  const reachable = host === "0.0.0.0" || host === "::" ? wildcardAs : host;
  return `http://${reachable.includes(":") ? `[${reachable}]` : reachable}:${port}`;
};

export interface CloseServerOptions {
  /** In-flight requests get this long to finish; then every connection is cut. */
  graceMs?: number;
  /** Runs when the grace period ends (e.g. terminate upgraded sockets the server no longer tracks). */
  onForce?: () => void;
}

/**
 * Graceful close of an HTTP server (docs/operations.md "Commands"): stop accepting, let in-flight
 * requests finish (bounded by `graceMs`), drop idle keep-alive sockets at once.
 */
export const closeHttpServer = (server: HttpServer, options: CloseServerOptions = {}): Promise<void> =>
  new Promise<void>((resolve) => {
    const force = setTimeout(() => {
      options.onForce?.();
      server.closeAllConnections();
    }, options.graceMs ?? 10_000);
    force.unref();
    // A keep-alive connection whose request finishes after close() began turns idle only then;
    // without a sweep it would hold the close for the whole keep-alive timeout (5 s).
    const sweep = setInterval(() => server.closeIdleConnections(), 50);
    sweep.unref();
    server.close(() => {
      clearTimeout(force);
      clearInterval(sweep);
      resolve();
    });
    server.closeIdleConnections();
  });
