import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiHarness, startApiHarness } from "../testing/api-harness.ts";

// Issue 35: /docs had no CSP or frame protection, and swagger-ui's demo pages ran on the API's origin.
let h: ApiHarness;
beforeAll(async () => {
  h = await startApiHarness();
});
afterAll(() => h?.close());

const get = (path: string) => fetch(`${h.api.url}${path}`);

describe("/docs", () => {
  it("answers the page and what it loads under a strict policy that forbids framing", async () => {
    for (const path of [
      "/docs",
      "/docs/docs-init.js",
      "/docs/assets/swagger-ui-bundle.js",
      "/docs/assets/swagger-ui.css",
    ]) {
      const res = await get(path);
      expect(res.status, path).toBe(200);
      const csp = res.headers.get("content-security-policy") ?? "";
      expect(csp, path).toContain("default-src 'none'");
      expect(csp, path).toContain("script-src 'self'");
      expect(csp, path).toContain("frame-ancestors 'none'");
      expect(csp, path).not.toContain("unsafe");
      expect(res.headers.get("x-frame-options"), path).toBe("DENY");
      await res.arrayBuffer();
    }
    const html = await (await get("/docs")).text();
    // Every script is a file of this origin (none inline), so the policy needs no 'unsafe-inline'.
    expect(html.match(/<script(?![^>]*\ssrc="\/docs\/)/g)).toBeNull();
  });

  it.each([
    "/docs/assets/index.html",
    "/docs/assets/oauth2-redirect.html",
    "/docs/assets/oauth2-redirect.js",
    "/docs/assets/swagger-initializer.js",
    "/docs/assets/swagger-ui.js",
    "/docs/assets/swagger-ui-bundle.js.map",
    "/docs/assets/package.json",
    "/docs/assets/",
    "/docs/assets/../package.json",
  ])("does not serve swagger-ui's other files: %s", async (path) => {
    const res = await get(path);
    expect(res.status).toBe(404);
    expect(await res.text()).not.toMatch(/swagger|<html/i);
  });
});
