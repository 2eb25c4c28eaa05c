import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface ReceivedRequest {
  path: string;
  body: Record<string, unknown>;
  headers: IncomingMessage["headers"];
}

/**
 * Slack, Teams, Telegram and PagerDuty as one HTTP server on loopback: it records every POST and
 * answers 200 `{"ok": true}` (Telegram's shape), or never answers for paths under `/hang/`.
 */
export const startHttpReceiver = async (): Promise<{
  url: string;
  requests: ReceivedRequest[];
  hanging: () => number;
  close(): Promise<void>;
}> => {
  const requests: ReceivedRequest[] = [];
  let open = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(text) as Record<string, unknown>;
      } catch {}
      if ((req.url ?? "").startsWith("/hang/")) {
        open++;
        req.socket.once("close", () => open--);
        return;
      }
      requests.push({ path: req.url ?? "", body, headers: req.headers });
      res.writeHead(200, { "content-type": "application/json" }).end('{"ok":true}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    hanging: () => open,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
};
