import { acquireStatusFeed, type StatusFeedHandle } from "@fleet/db";
import { pulseEvent, type TRouterStatusEvent } from "@fleet/shared";
import { eventually } from "@fleet/shared/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiHarness, startApiHarness } from "../../testing/api-harness.ts";
import { STREAM_RECHECK_MS } from "../auth/credential-watch.ts";

/**
 * docs/api.md "Authentication": a revoked API key, an expired access token or a removed
 * organization ends every `routers.onStatus` stream opened with it within 10 s, and no stream
 * delivers an event that happened after its credential stopped being valid. Real SSE over HTTP;
 * the API keeps its production recheck period; token expiry moves the API's clock.
 */
let h: ApiHarness;
let feed: StatusFeedHandle;

beforeAll(async () => {
  h = await startApiHarness();
  feed = await acquireStatusFeed(h.db);
});
afterAll(async () => {
  await feed?.release();
  await h?.close();
});

interface SseEvent {
  event: string;
  data: string;
}

/** One SSE stream of routers.onStatus, read as it arrives; `ended` resolves when the server closes it. */
const openStream = async (bearer: string) => {
  const abort = new AbortController();
  const res = await fetch(`${h.api.url}/trpc/routers.onStatus`, {
    headers: { accept: "text/event-stream", authorization: `Bearer ${bearer}` },
    signal: abort.signal,
  });
  expect(res.status).toBe(200);
  const events: SseEvent[] = [];
  let endedAt: number | undefined;
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  const ended = (async () => {
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      for (let cut = buffer.indexOf("\n\n"); cut !== -1; cut = buffer.indexOf("\n\n")) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const event = /^event: (.*)$/m.exec(block)?.[1] ?? "message";
        const data = [...block.matchAll(/^data: ?(.*)$/gm)].map((m) => m[1]).join("\n");
        events.push({ event, data });
      }
    }
    endedAt = Date.now();
  })();
  const routerEvents = () => events.filter((e) => e.event === "message" && e.data.includes("router_id"));
  return {
    events,
    routerEvents,
    ended,
    endedAt: () => endedAt,
    close: () => abort.abort(),
  };
};

/** `marker` is the event's `at` (ISO 8601 UTC, as the feed formats it). */
const pulse = (teamId: string, marker: string): TRouterStatusEvent =>
  pulseEvent({ routerId: crypto.randomUUID(), teamId, hasPulse: true, at: new Date(marker) });

/** Publishes until the stream delivers one event: its subscriber is registered from then on. */
const heard = async (stream: Awaited<ReturnType<typeof openStream>>, teamId: string) => {
  await eventually(async () => {
    await feed.feed.publish([pulse(teamId, "2026-11-25T00:00:00+00:00")]);
    return stream.routerEvents().length > 0;
  }, "the stream hears the team's events");
};

/** The stream ended with tRPC's UNAUTHORIZED, and none of `after` reached it. */
const endedUnauthorized = async (stream: Awaited<ReturnType<typeof openStream>>, after: string) => {
  await eventually(() => stream.endedAt() !== undefined, "the stream to end", 15_000);
  const error = stream.events.find((e) => e.event === "serialized-error");
  expect(error, JSON.stringify(stream.events)).toBeDefined();
  expect(JSON.parse(error?.data ?? "{}")).toMatchObject({
    data: { code: "UNAUTHORIZED", httpStatus: 401, appCode: "unauthenticated" },
  });
  expect(stream.routerEvents().filter((e) => e.data.includes(after))).toEqual([]);
};

const AFTER = "2026-11-25T23:59:59+00:00";

describe("routers.onStatus ends with its credential", () => {
  type Stream = Awaited<ReturnType<typeof openStream>>;
  /**
   * Two streams per case, each of its own organization: `busy` gets an event right after its
   * credential stops being valid (it must not be delivered), `idle` gets nothing at all (it must
   * still end within 10 s).
   */
  const twoStreams = async (credential: (user: Awaited<ReturnType<ApiHarness["login"]>>) => Promise<string>) => {
    const users = [await h.login(), await h.login()] as const;
    const busy = await openStream(await credential(users[0]));
    const idle = await openStream(await credential(users[1]));
    await heard(busy, users[0].teamId);
    await heard(idle, users[1].teamId);
    return { users, busy, idle };
  };
  const afterInvalid = async (busy: Stream, idle: Stream, teamId: string, invalidAt: number, publish = true) => {
    // Without any event, only the periodic recheck can end the streams.
    if (publish) await feed.feed.publish([pulse(teamId, AFTER)]);
    await endedUnauthorized(busy, AFTER);
    await endedUnauthorized(idle, AFTER);
    expect((idle.endedAt() ?? Number.POSITIVE_INFINITY) - invalidAt).toBeLessThan(10_000);
  };
  const keyOf = async (user: Awaited<ReturnType<ApiHarness["login"]>>) => {
    const created = await h.request("POST", "/v1/api-keys", {
      token: user.token,
      body: { name: "stream", scopes: ["routers:read"] },
    });
    expect(created.status).toBe(201);
    keys.set(created.body.key, created.body.id);
    return created.body.key as string;
  };
  const keys = new Map<string, string>();

  it("a revoked API key: the stream ends within 10 s and delivers nothing that happened after", async () => {
    const { users, busy, idle } = await twoStreams(keyOf);
    try {
      const ids = [...keys.values()].slice(-2);
      const revokedAt = Date.now();
      for (const [i, user] of users.entries()) {
        const res = await h.request("DELETE", `/v1/api-keys/${ids[i]}`, { token: user.token });
        expect(res.status).toBe(204);
      }
      await afterInvalid(busy, idle, users[0].teamId, revokedAt);
    } finally {
      busy.close();
      idle.close();
    }
  }, 60_000);

  it("an API key revoked by another API process (its row gone, this process's cache warm), nothing happening", async () => {
    const { users, busy, idle } = await twoStreams(keyOf);
    try {
      const revokedAt = Date.now();
      await h.db.query("delete from api_keys where id = any($1::uuid[])", [[...keys.values()].slice(-2)]);
      await afterInvalid(busy, idle, users[0].teamId, revokedAt, false);
      expect((busy.endedAt() ?? Number.POSITIVE_INFINITY) - revokedAt).toBeLessThan(10_000);
    } finally {
      busy.close();
      idle.close();
    }
  }, 60_000);

  it("an expired access token: the stream ends within 10 s and delivers nothing after the expiry", async () => {
    const { users, busy, idle } = await twoStreams(async (user) => user.token);
    try {
      // Every token of this harness (1 h) is past its expiry on the API's clock from now on.
      h.clock.offsetMs = 3_600_000 + 60_000;
      await afterInvalid(busy, idle, users[0].teamId, Date.now());
    } finally {
      h.clock.offsetMs = 0;
      busy.close();
      idle.close();
    }
  }, 60_000);

  it("a removed organization: the stream ends within 10 s and delivers nothing after", async () => {
    const { users, busy, idle } = await twoStreams(async (user) => user.token);
    try {
      const removedAt = Date.now();
      await h.db.query("delete from organizations where id = any($1::uuid[])", [users.map((u) => u.organizationId)]);
      await afterInvalid(busy, idle, users[0].teamId, removedAt);
    } finally {
      busy.close();
      idle.close();
    }
  }, 60_000);

  it("a valid credential keeps its stream through several recheck periods", async () => {
    const user = await h.login();
    const stream = await openStream(user.token);
    try {
      await heard(stream, user.teamId);
      const before = stream.routerEvents().length;
      const checks = Date.now() + 2 * STREAM_RECHECK_MS + 500;
      // Events keep arriving for two recheck periods and more: nothing ends the stream.
      await eventually(
        async () => {
          await feed.feed.publish([pulse(user.teamId, "2026-11-25T12:00:00+00:00")]);
          return Date.now() > checks && stream.routerEvents().length > before + 1;
        },
        "events across two rechecks",
        30_000,
      );
      expect(stream.endedAt()).toBeUndefined();
    } finally {
      stream.close();
    }
  }, 60_000);
});
