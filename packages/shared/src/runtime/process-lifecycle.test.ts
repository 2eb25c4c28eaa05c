import net from "node:net";
import { describe, expect, it } from "vitest";
import { ConfigError } from "../env/env-parsers.ts";
import { StartupError, startupErrorLine } from "./process-lifecycle.ts";
import { listen } from "./server-lifecycle.ts";

describe("startupErrorLine", () => {
  it("names the variable whose port is already in use, in one line", async () => {
    const holder = net.createServer();
    const port = await listen(holder, { host: "127.0.0.1", port: 0 });
    try {
      const error = await listen(net.createServer(), { host: "127.0.0.1", port }).catch((e: unknown) => e);
      const line = startupErrorLine(error, { PORT: port + 1, HEARTBEAT_PORT: port });
      expect(line).toBe(
        `Cannot start: HEARTBEAT_PORT=${port}: 127.0.0.1:${port} is already in use (another npm start?); set HEARTBEAT_PORT to another port.`,
      );
      expect(line).not.toContain("\n");
      // A port no variable set still gets the line, without a name.
      expect(startupErrorLine(error)).toMatch(/^Cannot start: 127\.0\.0\.1:\d+ is already in use/);
    } finally {
      await new Promise((resolve) => holder.close(resolve));
    }
  });

  it("passes configuration and start-up errors through as their own line, and leaves bugs alone", () => {
    expect(startupErrorLine(new ConfigError("PORT", "must be a TCP port number"))).toBe(
      "Invalid configuration: PORT must be a TCP port number",
    );
    expect(startupErrorLine(new StartupError("Cannot start: DATA_DIR x is open"))).toBe(
      "Cannot start: DATA_DIR x is open",
    );
    expect(startupErrorLine(new TypeError("x is undefined"))).toBeUndefined();
    expect(
      startupErrorLine(Object.assign(new Error("connect"), { code: "EADDRINUSE", syscall: "connect" })),
    ).toBeUndefined();
  });
});
