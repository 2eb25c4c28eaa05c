import { loadOemSnapshot } from "@fleet/db";
import { databaseFingerprint, makeRouter } from "@fleet/db/testing";
import { ZApiError, ZOemInfoResponse } from "@fleet/shared";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiHarness, startApiHarness } from "../../testing/api-harness.ts";

const snapshot = loadOemSnapshot();
const bySlug = (slug: string) => {
  const product = snapshot.products.find((p) => p.slug === slug);
  if (!product) throw new Error(`snapshot lacks ${slug}`);
  return product;
};

let h: ApiHarness;
beforeAll(async () => {
  h = await startApiHarness();
});
afterAll(async () => {
  await h?.close();
});

/** A 404 JSend fail that leaves the database as it was. */
const expectNotFound = async (path: string, token: string, message: string | RegExp) => {
  const before = await databaseFingerprint(h.db);
  const res = await h.request("GET", path, { token });
  expect(await databaseFingerprint(h.db)).toBe(before);
  expect(res.status).toBe(404);
  expect(ZApiError.safeParse(res.body).success).toBe(true);
  expect(res.body.status).toBe("fail");
  if (typeof message === "string") expect(res.body.message).toBe(message);
  else expect(res.body.message).toMatch(message);
  return res;
};

describe("GET /api/routers/{router_id}/oem", () => {
  it("answers the OEM Information of the router's model in a JSend envelope", async () => {
    const owner = await h.login();
    const router = await makeRouter(h.db, owner, { model: "RB5009UG+S+", boardName: "RB5009UG+S+" });
    const res = await h.request("GET", `/api/routers/${router.id}/oem`, { token: owner.token });
    expect(res.status).toBe(200);
    expect(ZOemInfoResponse.strict().safeParse(res.body).success).toBe(true);
    const { match_keys: _internal, ...expected } = bySlug("rb5009ug_s_in");
    expect(res.body).toEqual({ status: "success", data: expected });
    expect(res.body.data).not.toHaveProperty("match_keys");
    expect(res.body.data).toMatchObject({
      slug: "rb5009ug_s_in",
      archived: false,
      cpu_core_count: "4",
      price: "219.00",
      ports: [
        { type: "Gigabit Ethernet", count: 7, speed_mbps: 1000 },
        { type: "2.5G Ethernet", count: 1, speed_mbps: 2500 },
        { type: "SFP+", count: 1, speed_mbps: 10000 },
      ],
    });
    const filtered = res.body.data.test_results.ethernet.find(
      (r: { mode: string; config: string; packet_size: number }) =>
        r.mode === "Routing" && r.config === "25 ip filter rules" && r.packet_size === 1518,
    );
    expect(filtered.mbps).toBeGreaterThan(1000);
  });

  it("matches by board name in any spelling, and virtual instances get CHR", async () => {
    const owner = await h.login();
    const cases = [
      { model: "", boardName: "hap AX^3", slug: "hap_ax3" },
      { model: "RB750Gr3", boardName: "hEX", slug: "hex" },
      { model: "", boardName: "CHR QEMU Standard PC (Q35 + ICH9, 2009)", slug: "chr" },
    ];
    for (const c of cases) {
      const router = await makeRouter(h.db, owner, { model: c.model, boardName: c.boardName });
      const res = await h.request("GET", `/api/routers/${router.id}/oem`, { token: owner.token });
      expect(res.status, c.boardName).toBe(200);
      expect(res.body.data.slug).toBe(c.slug);
    }
    const chr = await makeRouter(h.db, owner, { model: "CHR", boardName: "CHR" });
    const res = await h.request("GET", `/api/routers/${chr.id}/oem`, { token: owner.token });
    expect(res.body.data).toMatchObject({ model: "CHR", mtbf: null, cpu_nominal_frequency: null, ports: [] });
  });

  it("answers 404 for another team's router, exactly like an unknown id", async () => {
    const owner = await h.login();
    const stranger = await h.login();
    const router = await makeRouter(h.db, owner, { model: "RB750Gr3", boardName: "hEX" });
    const foreign = await expectNotFound(`/api/routers/${router.id}/oem`, stranger.token, "Router not found.");
    const unknown = await expectNotFound(
      `/api/routers/${crypto.randomUUID()}/oem`,
      stranger.token,
      "Router not found.",
    );
    // Identical but for the id of each request.
    expect({ ...foreign.body, request_id: "" }).toEqual({ ...unknown.body, request_id: "" });
  });

  it.each(["not-a-uuid", "1", "00000000-0000-0000-0000-00000000000g", "x".repeat(300), "%27%20or%20%271%27%3D%271"])(
    "answers 404 for the malformed id %s",
    async (id) => {
      const owner = await h.login();
      await expectNotFound(`/api/routers/${id}/oem`, owner.token, "Router not found.");
    },
  );

  it("answers 404 with a clear message when no data exists for the model", async () => {
    const owner = await h.login();
    const unknownModel = await makeRouter(h.db, owner, { model: "RB951G-2HnD", boardName: "RB951G-2HnD" });
    await expectNotFound(
      `/api/routers/${unknownModel.id}/oem`,
      owner.token,
      "No manufacturer data for model RB951G-2HnD.",
    );
    const both = await makeRouter(h.db, owner, { model: "RB999X", boardName: "Mystery Board" });
    await expectNotFound(
      `/api/routers/${both.id}/oem`,
      owner.token,
      "No manufacturer data for model RB999X (board name Mystery Board).",
    );
    const silent = await makeRouter(h.db, owner, { model: "", boardName: "" });
    await expectNotFound(`/api/routers/${silent.id}/oem`, owner.token, /has not reported its model yet/);
  });

  it("needs a token with routers:read", async () => {
    const owner = await h.login();
    const router = await makeRouter(h.db, owner, { model: "RB750Gr3" });
    const anonymous = await h.request("GET", `/api/routers/${router.id}/oem`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.status).toBe("fail");
    const limited = await h.login(undefined, { scope: "account:read routers:write" });
    const mine = await makeRouter(h.db, limited, { model: "RB750Gr3" });
    const forbidden = await h.request("GET", `/api/routers/${mine.id}/oem`, { token: limited.token });
    expect(forbidden.status).toBe(403);
    expect(forbidden.body).toMatchObject({ status: "fail", message: expect.stringContaining("routers:read") });
  });
});

describe("OpenAPI", () => {
  it("documents the endpoint under the routers tag", async () => {
    const res = await h.request("GET", "/openapi.json");
    const operation = res.body.paths["/api/routers/{router_id}/oem"]?.get;
    expect(operation?.tags).toEqual(["routers"]);
    expect(operation?.parameters?.map((p: { name: string; in: string }) => `${p.in}:${p.name}`)).toEqual([
      "path:router_id",
    ]);
  });
});

describe("tRPC routers.oem", () => {
  const call = async (token: string, routerId: string) => {
    const input = encodeURIComponent(JSON.stringify({ router_id: routerId }));
    const res = await fetch(`${h.api.url}/trpc/routers.oem?input=${input}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    return {
      status: res.status,
      body: (await res.json()) as {
        result?: { data: unknown };
        error?: { message: string; data: { httpStatus: number } };
      },
    };
  };

  it("answers the same body as REST", async () => {
    const owner = await h.login();
    const router = await makeRouter(h.db, owner, { model: "CCR2004-1G-12S+2XS", boardName: "CCR2004-1G-12S+2XS" });
    const rest = await h.request("GET", `/api/routers/${router.id}/oem`, { token: owner.token });
    const trpc = await call(owner.token, router.id);
    expect(trpc.status).toBe(200);
    expect(trpc.body.result?.data).toEqual(rest.body);
  });

  it("answers NOT_FOUND for an unknown router and for an unknown model", async () => {
    const owner = await h.login();
    const unknown = await call(owner.token, crypto.randomUUID());
    expect(unknown.status).toBe(404);
    expect(unknown.body.error?.message).toBe("Router not found.");
    const router = await makeRouter(h.db, owner, { model: "RB000" });
    const noData = await call(owner.token, router.id);
    expect(noData.status).toBe(404);
    expect(noData.body.error?.message).toBe("No manufacturer data for model RB000.");
  });
});
