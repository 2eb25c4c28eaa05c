import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { closeHttpServer, listen } from "@fleet/shared";
import { type StripeEmulator, startStripeEmulator } from "@fleet/stripe-emulator";
import express from "express";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ConsoleOptions, consoleContentSecurityPolicy, consoleRouter } from "./console-page.ts";

/** docs/console.md "Served by the API": the files, the page's configuration, the policy, the card pass-through. */
let dir: string;
let emulator: StripeEmulator;
const servers: Server[] = [];

const serve = async (options: ConsoleOptions): Promise<string> => {
  const app = express();
  app.use(consoleRouter(options));
  const server = createServer(app);
  servers.push(server);
  const port = await listen(server, { host: "127.0.0.1", port: 0 });
  return `http://127.0.0.1:${port}`;
};

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "console-page-"));
  mkdirSync(path.join(dir, "assets"));
  writeFileSync(
    path.join(dir, "index.html"),
    '<!doctype html><head><!--console-config--><script type="module" src="/console/assets/app.js"></script></head>',
  );
  writeFileSync(path.join(dir, "assets", "app.js"), "console.log(1)");
  emulator = await startStripeEmulator({ host: "127.0.0.1", port: 0, dataDir: "memory" });
});

afterAll(async () => {
  for (const server of servers) await closeHttpServer(server);
  await emulator?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("the console page", () => {
  it("serves every page path the same document, with its configuration and a policy of this origin only", async () => {
    const base = await serve({ dir, devLogin: true, processor: { kind: "emulator", apiBase: new URL(emulator.url) } });
    for (const page of ["/console/", "/console/routers/abc", "/console/billing"]) {
      const res = await fetch(`${base}${page}`);
      expect(res.status).toBe(200);
      const csp = res.headers.get("content-security-policy") ?? "";
      expect(csp).toContain("default-src 'none'");
      expect(csp).toContain("script-src 'self';");
      expect(csp).toContain("connect-src 'self';");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).not.toMatch(/https?:|'unsafe-inline'|'unsafe-eval'/);
      expect(res.headers.get("cache-control")).toBe("no-cache");
      const html = await res.text();
      expect(html).toContain(
        '<script id="console-config" type="application/json">{"devLogin":true,"oidc":null,"processor":{"kind":"emulator","path":"/console/processor"}}</script>',
      );
    }
    const bare = await fetch(`${base}/console`, { redirect: "manual" });
    expect([bare.status, bare.headers.get("location")]).toEqual([302, "/console/"]);
    const asset = await fetch(`${base}/console/assets/app.js`);
    expect(asset.status).toBe(200);
    expect(asset.headers.get("cache-control")).toContain("immutable");
    expect((await fetch(`${base}/console/assets/missing.js`)).status).toBe(404);
  });

  it("admits Stripe's script, frames and API only when real keys are set", () => {
    const stripe = consoleContentSecurityPolicy({ kind: "stripe" });
    expect(stripe).toContain("script-src 'self' https://js.stripe.com;");
    expect(stripe).toContain("frame-src https://js.stripe.com https://hooks.stripe.com;");
    expect(stripe).toContain("connect-src 'self' https://api.stripe.com;");
    const others = stripe.match(/https:\/\/[^\s;]+/g) ?? [];
    expect(new Set(others)).toEqual(
      new Set(["https://js.stripe.com", "https://hooks.stripe.com", "https://api.stripe.com"]),
    );
    expect(consoleContentSecurityPolicy({ kind: "emulator", apiBase: new URL("http://127.0.0.1:1") })).toContain(
      "frame-src 'none'",
    );
  });

  it("says how to build it when the bundle is missing", async () => {
    const base = await serve({ dir: path.join(dir, "nowhere"), devLogin: false, processor: { kind: "stripe" } });
    const res = await fetch(`${base}/console/`);
    expect(res.status).toBe(503);
    expect(await res.text()).toContain("npm run build:console");
  });

  it("passes the card flow's two client-side calls to the emulator, and nothing else", async () => {
    const base = await serve({ dir, devLogin: false, processor: { kind: "emulator", apiBase: new URL(emulator.url) } });
    const post = (suffix: string, body: Record<string, string>) =>
      fetch(`${base}/console/processor${suffix}`, {
        method: "POST",
        headers: { authorization: "Bearer pk_test_console", "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams(body),
      });
    const card = await post("/v1/payment_methods", {
      type: "card",
      "card[number]": "4242424242424242",
      "card[exp_month]": "12",
      "card[exp_year]": String(new Date().getFullYear() + 2),
      "card[cvc]": "123",
    });
    expect(card.status).toBe(200);
    expect(((await card.json()) as { id: string }).id).toMatch(/^pm_/);
    // Server-side endpoints are not reachable through it, whatever key is sent.
    expect((await post("/v1/customers", { email: "x@example.com" })).status).toBe(404);
    expect((await post("/v1/setup_intents/../../v1/customers/confirm", {})).status).toBe(404);
    expect((await post("/v1/setup_intents/not-an-id/confirm", {})).status).toBe(400);
    const big = await post("/v1/payment_methods", { type: "card", pad: "x".repeat(8 * 1024) });
    expect(big.status).toBe(413);
    // With real keys the pass-through does not exist.
    const real = await serve({ dir, devLogin: false, processor: { kind: "stripe" } });
    const none = await fetch(`${real}/console/processor/v1/payment_methods`, { method: "POST", body: "type=card" });
    expect(none.status).not.toBe(200);
  });
});
