import { startTestSystem, type TestSystem } from "@fleet/all-in-one/testing";
import { loadAllInOneConfig } from "@fleet/all-in-one";
import { createTestDatabase, type TestDatabase } from "@fleet/db/testing";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { testSystemEnv } from "../support/system-env.ts";

/**
 * docs/routeros.md "Adoption" (CONTRACT 10): the first heartbeat made with an adoption's token spends
 * its URL, and it is spent when that heartbeat is acknowledged, not when the batched liveness write
 * lands later: fetching the URL right after the ack answers 410, over WebSocket and HTTP, for an
 * enrollment and a re-adoption. The writer's flush is held back here, so only the spend itself can
 * make the URL answer 410 that soon.
 */
const INTERVAL_MS = 1_000;

let db: TestDatabase;
let system: TestSystem;
let accessToken: string;

const api = async (method: string, path: string, body?: unknown) => {
  const res = await fetch(`${system.api.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${accessToken}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
};

const heartbeat = JSON.stringify({ type: "heartbeat", identity: "spender", uptime: 60 });
const scriptStatus = async (url: string) => (await fetch(url)).status;

/** Frames sent at once over a new socket; resolves with the daemon's answers, one per frame, in order. */
const overWebSocket = (token: string, frames: string[]): Promise<unknown[]> =>
  new Promise((resolve, reject) => {
    const ws = new WebSocket(system.heartbeat.wsUrl, { headers: { authorization: `Bearer ${token}` } });
    const answers: unknown[] = [];
    ws.on("error", reject);
    ws.on("open", () => {
      for (const frame of frames) ws.send(frame);
    });
    ws.on("message", (data) => {
      answers.push(JSON.parse(data.toString()));
      if (answers.length < frames.length) return;
      ws.close();
      resolve(answers);
    });
  });

const overHttp = async (token: string) => {
  const res = await fetch(`${system.heartbeat.url}/v1/heartbeat`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: heartbeat,
  });
  return { status: res.status, body: await res.json() };
};

const tokenOf = async (url: string) => /Bearer (hb_[A-Za-z0-9_-]+),/.exec(await (await fetch(url)).text())?.[1] ?? "";

beforeAll(async () => {
  db = await createTestDatabase();
  const config = loadAllInOneConfig(
    testSystemEnv({ HEARTBEAT_INTERVAL_MS: String(INTERVAL_MS), MISSED_HEARTBEATS: "1000" }),
  );
  // Acknowledged heartbeats are not written during the test: the URL's state is the spend's alone.
  config.heartbeat.tuning.flushIntervalMs = 600_000;
  config.heartbeat.tuning.steadyFlushMs = 600_000;
  system = await startTestSystem({ config, logger: pino({ level: "silent" }), db });
  const email = `spent-${crypto.randomUUID()}@example.com`;
  accessToken = (
    (await (
      await fetch(`${system.api.url}/v1/auth/dev-login`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ email }),
      })
    ).json()) as { access_token: string }
  ).access_token;
  expect((await api("POST", "/v1/account", { name: "Spent", email, address: { country: "US" } })).status).toBe(201);
});

afterAll(async () => {
  await system?.close();
  await db?.close();
});

const ACK = { type: "ack", interval_ms: INTERVAL_MS };

describe("the first heartbeat spends the adoption URL before it is acknowledged", () => {
  it("over WebSocket, at enrollment and at re-adoption; a refused frame spends nothing", async () => {
    const enrolled = await api("POST", "/api/routers", { name: "ws site" });
    expect(enrolled.status).toBe(201);
    const { url } = enrolled.body.data.adoption as { url: string };
    const token: string = enrolled.body.data.heartbeat_token;
    // A frame that is not a heartbeat is refused and is no first heartbeat.
    const [refused] = await overWebSocket(token, ['{"type":"nonsense"}']);
    expect(refused).toMatchObject({ type: "error" });
    expect(await scriptStatus(url)).toBe(200);

    expect(await overWebSocket(token, [heartbeat])).toEqual([ACK]);
    expect(await scriptStatus(url)).toBe(410);

    const again = await api("POST", `/api/routers/${enrolled.body.data.router.id}/adoption`);
    expect(again.status).toBe(201);
    const newToken = await tokenOf(again.body.data.url);
    expect(newToken).not.toBe(token);
    expect(await scriptStatus(again.body.data.url)).toBe(200);
    // Well inside the re-adoption's grace for clocks that disagree: the spend does not wait it out.
    // Frames behind the first are acknowledged after it, in order; a bad one still gets its error.
    expect(await overWebSocket(newToken, [heartbeat, "{", heartbeat])).toEqual([
      ACK,
      expect.objectContaining({ type: "error" }),
      ACK,
    ]);
    expect(await scriptStatus(again.body.data.url)).toBe(410);
  });

  it("over HTTP, at enrollment and at re-adoption", async () => {
    const enrolled = await api("POST", "/api/routers", { name: "http site" });
    expect(enrolled.status).toBe(201);
    const { url } = enrolled.body.data.adoption as { url: string };
    expect(await scriptStatus(url)).toBe(200);
    expect(await overHttp(enrolled.body.data.heartbeat_token)).toEqual({ status: 200, body: ACK });
    expect(await scriptStatus(url)).toBe(410);

    const again = await api("POST", `/api/routers/${enrolled.body.data.router.id}/adoption`);
    expect(again.status).toBe(201);
    const newToken = await tokenOf(again.body.data.url);
    expect(await scriptStatus(again.body.data.url)).toBe(200);
    expect(await overHttp(newToken)).toEqual({ status: 200, body: ACK });
    expect(await scriptStatus(again.body.data.url)).toBe(410);
    // Later heartbeats of the same token are acknowledged as before.
    expect(await overHttp(newToken)).toEqual({ status: 200, body: ACK });
  });
});
