import { makeRouter } from "@fleet/db/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiHarness, startApiHarness } from "../../testing/api-harness.ts";

let h: ApiHarness;
beforeAll(async () => {
  h = await startApiHarness();
});
afterAll(async () => {
  await h?.close();
});

describe("router metadata from the OEM catalogue", () => {
  it("fills slug and image URLs from the matched model; a user's images win", async () => {
    const login = await h.login();
    const router = await makeRouter(h.db, login, { model: "RB5009UG+S+", boardName: "RB5009UG+S+" });
    const oem = await h.request("GET", `/api/routers/${router.id}/oem`, { token: login.token });
    expect(oem.status).toBe(200);
    const meta = await h.request("GET", `/api/routers/${router.id}/metadata`, { token: login.token });
    expect(meta.status).toBe(200);
    expect(meta.body.data).toMatchObject({ slug: oem.body.data.slug, model: "RB5009UG+S+" });
    if (oem.body.data.banner) expect(meta.body.data.banner_img).toBe(oem.body.data.banner);
    if (oem.body.data.thumbnail) expect(meta.body.data.thumbnail_img).toBe(oem.body.data.thumbnail);

    const own = "https://images.example.com/rack-7.png";
    const patched = await h.request("PATCH", `/api/routers/${router.id}/metadata`, {
      token: login.token,
      body: { banner_img: own },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.data).toMatchObject({ banner_img: own, slug: oem.body.data.slug });
  });

  it("leaves them out for a model the catalogue does not know", async () => {
    const login = await h.login();
    const router = await makeRouter(h.db, login, { model: "Mystery 9000", boardName: "" });
    const meta = await h.request("GET", `/api/routers/${router.id}/metadata`, { token: login.token });
    expect(meta.status).toBe(200);
    expect(meta.body.data).not.toHaveProperty("slug");
    expect(meta.body.data).not.toHaveProperty("banner_img");
  });
});
