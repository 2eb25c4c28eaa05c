import { makeRouter } from "@fleet/db/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiHarness, startApiHarness } from "../../testing/api-harness.ts";

let h: ApiHarness;

beforeAll(async () => {
  h = await startApiHarness({ FORWARDS_PER_ORG: "2" });
});

afterAll(async () => {
  await h?.close();
});

const accessBody = { service: "winbox", level: "read", expire_after_minutes: 15, allow_from: "8.8.8.8" };
const forwardBody = { dst_address: "192.168.88.1", dst_port: 22, allow_from: "8.8.8.8", expire_after_minutes: 10 };

describe("temporary access shares FORWARDS_PER_ORG with forwards", () => {
  it("n forwards and access sessions together ok, the next of either kind 429 with Retry-After", async () => {
    const user = await h.login();
    const a = await makeRouter(h.db, user);
    const b = await makeRouter(h.db, user);
    expect(
      (await h.request("POST", `/api/routers/${a.id}/access`, { token: user.token, body: accessBody })).status,
    ).toBe(201);
    expect(
      (await h.request("POST", `/api/routers/${b.id}/transient-forwarding`, { token: user.token, body: forwardBody }))
        .status,
    ).toBe(201);
    const forward = await h.refused("POST", `/api/routers/${b.id}/transient-forwarding`, {
      token: user.token,
      body: forwardBody,
    });
    expect(forward.status).toBe(429);
    const access = await h.refused("POST", `/api/routers/${a.id}/access`, { token: user.token, body: accessBody });
    expect(access.status).toBe(429);
    expect(access.headers.get("retry-after")).toMatch(/^\d+$/);
    // Another organization is not affected.
    const other = await h.login();
    const theirs = await makeRouter(h.db, other);
    expect(
      (await h.request("POST", `/api/routers/${theirs.id}/access`, { token: other.token, body: accessBody })).status,
    ).toBe(201);
  });
});
