import { makeRouter } from "@fleet/db/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiHarness, startApiHarness } from "../../testing/api-harness.ts";

// docs/api.md "Tunnel agent and entry point": a loopback allow_from is a development convenience;
// with NODE_ENV=production it is refused like every other range that is not publicly routed.
let h: ApiHarness;

beforeAll(async () => {
  h = await startApiHarness({
    // Production, with what production requires (docs/operations.md "Production").
    NODE_ENV: "production",
    STRIPE_EMULATOR: "true",
    WEBHOOK_ENCRYPTION_KEY: "w".repeat(32),
    ACCESS_PASSWORD_KEY: "a".repeat(32),
    TUNNEL_SSH_PUBLIC_KEY: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKey",
    ENTRY_POINT_HOST: "entry.fleet.test",
    ENTRY_POINT_PORTS: "45000-45099",
  });
});
afterAll(async () => {
  await h?.close();
});

describe("allow_from in production", () => {
  it.each(["127.0.0.1", "127.64.0.0/24"])(
    "refuses the loopback %s with 422 naming allow_from, and creates nothing",
    async (allow) => {
      const user = await h.login();
      const router = await makeRouter(h.db, user);
      const res = await h.refused("POST", `/api/routers/${router.id}/transient-forwarding`, {
        token: user.token,
        body: { expire_after_minutes: 60, dst_port: 80, dst_address: "192.168.88.10", allow_from: allow },
      });
      expect(res.status).toBe(422);
      expect(Object.keys(res.body.data)).toEqual(["allow_from"]);
      expect(res.body.data.allow_from).toMatch(/publicly routed.*loopback/);
      const rows = await h.db.query("select id from forwards where router_id = $1", [router.id]);
      expect(rows).toEqual([]);
    },
  );

  it("still accepts a public source", async () => {
    const user = await h.login();
    const router = await makeRouter(h.db, user);
    const res = await h.request("POST", `/api/routers/${router.id}/transient-forwarding`, {
      token: user.token,
      body: { expire_after_minutes: 60, dst_port: 80, dst_address: "192.168.88.10", allow_from: "8.8.8.8" },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ allow_only_cidr: "8.8.8.8/32", state: "pending" });
  });
});
