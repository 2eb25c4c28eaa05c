import { Agent, request } from "node:http";
import { createTestDatabase, databaseFingerprint, makeRouter, makeUser, type TestDatabase } from "@fleet/db/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DaemonHarness, startDaemonHarness } from "../testing/daemon-harness.ts";

let db: TestDatabase;
let h: DaemonHarness;
let owner: { organizationId: string; teamId: string };
const FLOOD_BURST = 3;
const NEVER_MS = 3_600_000;

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Record<string, unknown>;
  reusedSocket: boolean;
}

/** One POST over `agent` (a load balancer's keep-alive pool in miniature). */
const post = (agent: Agent, token: string, body: string, contentType = "application/json"): Promise<Answer> =>
  new Promise((resolve, reject) => {
    const url = new URL("/v1/heartbeat", h.daemon.url);
    const req = request(
      url,
      {
        method: "POST",
        agent,
        headers: {
          authorization: `Bearer ${token}`,
          "content-type": contentType,
          "content-length": Buffer.byteLength(body),
        },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          text += chunk;
        });
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: JSON.parse(text),
            reusedSocket: req.reusedSocket,
          }),
        );
      },
    );
    req.on("error", reject);
    req.end(body);
  });

const beat = (fields: Record<string, unknown> = {}) => JSON.stringify({ type: "heartbeat", ...fields });

beforeAll(async () => {
  db = await createTestDatabase();
  owner = await makeUser(db);
  // A tiny bucket that refills slowly: the bound is reached in a few requests, whatever the machine's speed.
  // The writer flushes only when a test says so (h.daemon.flush): a timer's flush between two steps
  // would make what a step sees depend on the machine's speed.
  h = await startDaemonHarness(db, {
    intervalMs: 1_000,
    tuning: { floodBurst: FLOOD_BURST, floodPerSecond: 0.1, flushIntervalMs: NEVER_MS, steadyFlushMs: NEVER_MS },
  });
});

afterAll(async () => {
  await h?.close();
  await db?.close();
});

describe('HTTP heartbeats (docs/api.md "Routers and heartbeats")', () => {
  it("keeps connections alive, looks the token up once, and writes through the batched writer", async () => {
    const router = await makeRouter(db, owner, { identity: "" });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const lookups = h.daemon.stats().tokenLookups;
      const rows = h.daemon.stats().rows;
      const answers: Answer[] = [];
      for (let n = 0; n < FLOOD_BURST; n++)
        answers.push(await post(agent, router.heartbeatToken, beat({ uptime: n, identity: "pooled" })));
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
      expect(answers[0]?.body).toEqual({ type: "ack", interval_ms: 1_000 });
      expect(answers.slice(1).every((a) => a.reusedSocket)).toBe(true);
      expect(answers[0]?.headers["keep-alive"]).toMatch(/timeout=65/);
      expect(h.daemon.stats().tokenLookups - lookups).toBe(1);
      await h.daemon.flush();
      // Written by the writer (acked before any SQL ran): at most one row per heartbeat, merged per flush.
      expect(h.daemon.stats().rows - rows).toBeLessThanOrEqual(FLOOD_BURST);
      const [row] = await db.query<{ identity: string; uptime: number }>(
        "select identity, uptime_seconds::int as uptime from routers r left join router_liveness l on l.router_id = r.id where r.id = $1",
        [router.id],
      );
      expect(row).toEqual({ identity: "pooled", uptime: FLOOD_BURST - 1 });
    } finally {
      agent.destroy();
    }
  });

  it(`takes ${FLOOD_BURST} heartbeats of a router at once and answers the next 429 with Retry-After, writing nothing`, async () => {
    const flooder = await makeRouter(db, owner, { identity: "" });
    const other = await makeRouter(db, owner, { identity: "" });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      for (let n = 0; n < FLOOD_BURST; n++)
        expect((await post(agent, flooder.heartbeatToken, beat())).status).toBe(200);
      await h.daemon.flush();
      const before = await databaseFingerprint(db);
      const refused = await post(agent, flooder.heartbeatToken, beat({ identity: "flood" }));
      expect(refused.status).toBe(429);
      expect(refused.body).toMatchObject({ type: "error", message: expect.stringMatching(/Too many heartbeats/) });
      const retryAfter = Number(refused.headers["retry-after"]);
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(10);
      await h.daemon.flush();
      expect(await databaseFingerprint(db)).toBe(before);
      // The bound is per router: another router on the same connection is not affected.
      expect((await post(agent, other.heartbeatToken, beat({ identity: "other" }))).status).toBe(200);
    } finally {
      agent.destroy();
    }
  });

  it("refuses a router's header with 401 once the router is gone, though the daemon remembered that header", async () => {
    const router = await makeRouter(db, owner);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      // The second heartbeat finds the owner cached, and its header is remembered from then on.
      for (let n = 0; n < 2; n++) expect((await post(agent, router.heartbeatToken, beat())).status).toBe(200);
      // A fresh writer flushes its first heartbeat at once: that write lands before the deletion.
      await h.daemon.flush();
      await db.query("delete from routers where id = $1", [router.id]);
      // Deleted without notice: still cached, so acknowledged; the flush finds the row gone and revokes the router.
      expect((await post(agent, router.heartbeatToken, beat())).status).toBe(200);
      await h.daemon.flush();
      const refused = await post(agent, router.heartbeatToken, beat());
      expect(refused).toMatchObject({ status: 401, body: { type: "error" } });
      expect(refused.headers["www-authenticate"]).toMatch(/^Bearer/);
    } finally {
      agent.destroy();
    }
  });

  it("answers 415 to a body that is not JSON by its content type, writing nothing", async () => {
    const router = await makeRouter(db, owner);
    const agent = new Agent({ keepAlive: true });
    try {
      await h.daemon.flush();
      const before = await databaseFingerprint(db);
      const answer = await post(agent, router.heartbeatToken, beat(), "application/x-www-form-urlencoded");
      expect(answer).toMatchObject({ status: 415, body: { type: "error" } });
      expect((await post(agent, router.heartbeatToken, beat(), "text/plain")).status).toBe(415);
      await h.daemon.flush();
      expect(await databaseFingerprint(db)).toBe(before);
      expect((await post(agent, router.heartbeatToken, beat(), "application/json; charset=utf-8")).status).toBe(200);
    } finally {
      agent.destroy();
    }
  });
});
