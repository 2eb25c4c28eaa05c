import { createRequire } from "node:module";
import type { Writable } from "node:stream";
import * as ws from "ws";
import { describe, expect, it } from "vitest";
import { textFrame } from "./ws-heartbeats.ts";

// ws exports its frame parser, but @types/ws does not declare it.
const { Receiver } = ws as unknown as { Receiver: new (options: { isServer: boolean }) => Writable };

/** Decodes server frames the way a client's `ws` does. */
const decode = (wire: Buffer): Promise<string> =>
  new Promise((resolve, reject) => {
    const receiver = new Receiver({ isServer: false });
    receiver.on("message", (data: Buffer, isBinary: boolean) =>
      isBinary ? reject(new Error("binary frame")) : resolve(data.toString("utf8")),
    );
    receiver.on("error", reject);
    receiver.write(wire);
  });

describe("textFrame (the pre-built ack)", () => {
  it("is a whole text frame a client decodes, up to 125 bytes of payload", async () => {
    const ack = '{"type":"ack","interval_ms":30000}';
    await expect(decode(textFrame(Buffer.from(ack)))).resolves.toBe(ack);
    const longest = "x".repeat(125);
    await expect(decode(textFrame(Buffer.from(longest)))).resolves.toBe(longest);
  });

  it("refuses a payload of 126 bytes, which needs an extended length", () => {
    expect(() => textFrame(Buffer.alloc(126))).toThrow(/short/);
  });
});

describe("frame unmasking", () => {
  it("uses bufferutil's native binding where ws looks for it, not its JavaScript fallback", () => {
    // Resolved from ws's own directory, as ws's buffer-util.js requires it.
    const fromWs = createRequire(import.meta.resolve("ws"));
    const native = fromWs("bufferutil") as { unmask: unknown };
    const fallback = fromWs("bufferutil/fallback") as { unmask: unknown };
    expect(native.unmask).not.toBe(fallback.unmask);
  });
});
