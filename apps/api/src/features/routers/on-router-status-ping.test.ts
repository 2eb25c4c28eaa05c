import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiHarness, startApiHarness } from "../../testing/api-harness.ts";
import { SSE_PING_INTERVAL_MS } from "../../trpc/init.ts";

let h: ApiHarness;

beforeAll(async () => {
  h = await startApiHarness();
});

afterAll(async () => {
  await h?.close();
});

describe("routers.onStatus keep-alive", () => {
  it("an idle subscription receives SSE ping events, so proxies do not cut it", async () => {
    const user = await h.login();
    const params = encodeURIComponent(JSON.stringify({ token: user.token }));
    const abort = new AbortController();
    const res = await fetch(`${h.api.url}/trpc/routers.onStatus?connectionParams=${params}`, {
      headers: { accept: "text/event-stream" },
      signal: abort.signal,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/text\/event-stream/);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = "";
    try {
      // Nothing happens in this team: whatever arrives is keep-alive.
      while (!/event: ping/.test(text)) {
        const { value, done } = await reader.read();
        if (done) break;
        text += decoder.decode(value);
      }
    } finally {
      abort.abort();
    }
    expect(text).toMatch(/event: ping/);
    // The stream tells the client to reconnect if even pings stop.
    expect(text).toMatch(new RegExp(`"reconnectAfterInactivityMs":${SSE_PING_INTERVAL_MS * 4}`));
  }, 30_000);
});
