import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { eventually } from "../testing/eventually.ts";
import { closeHttpServer } from "./server-lifecycle.ts";

describe("closeHttpServer", () => {
  it("answers a request in flight, then closes its keep-alive connection at once (not after the keep-alive timeout)", async () => {
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let arrived = false;
    const server = createServer((_req, res) => {
      arrived = true;
      void held.then(() => res.end("done"));
    });
    // Long enough that waiting for it would time the test out.
    server.keepAliveTimeout = 600_000;
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    const answer = new Promise<string>((resolve, reject) => {
      const req = request({ port, host: "127.0.0.1", headers: { connection: "keep-alive" } }, (res) => {
        let body = "";
        res.on("data", (chunk: Buffer) => {
          body += chunk.toString();
        });
        res.on("end", () => resolve(body));
      });
      req.on("error", reject);
      req.end();
    });
    // The request has reached the handler: the connection is active, not idle.
    await eventually(() => arrived, "the request in the handler");
    const closed = closeHttpServer(server, { graceMs: 600_000 });
    release();
    expect(await answer).toBe("done");
    await closed;
  });
});
