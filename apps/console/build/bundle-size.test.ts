import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { gzipSync } from "node:zlib";
import { beforeAll, describe, expect, it } from "vitest";
import { BUNDLE_BUDGET_GZIP_BYTES, consoleDistDir, ensureConsoleBuilt } from "./console-build.ts";

beforeAll(async () => {
  const warnings: string[] = [];
  const outcome = await ensureConsoleBuilt({ info: () => undefined, warn: (m) => warnings.push(m) });
  expect({ outcome, warnings }).toEqual({ outcome: expect.not.stringMatching("failed"), warnings: [] });
}, 120_000);

describe("the console bundle", () => {
  it("stays within its gzip budget", () => {
    const assets = readdirSync(path.join(consoleDistDir, "assets")).filter((f) => /\.(js|css)$/.test(f));
    const sizes = Object.fromEntries(
      assets.map((file) => [
        file,
        gzipSync(readFileSync(path.join(consoleDistDir, "assets", file)), { level: 9 }).length,
      ]),
    );
    const total = Object.values(sizes).reduce((a, b) => a + b, 0);
    expect(assets.some((f) => f.endsWith(".js"))).toBe(true);
    expect(total, JSON.stringify(sizes)).toBeLessThanOrEqual(BUNDLE_BUDGET_GZIP_BYTES);
  });

  it("has no inline script or style for the content security policy to refuse", () => {
    const html = readFileSync(path.join(consoleDistDir, "index.html"), "utf8");
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts.length).toBeGreaterThan(0);
    for (const [, attributes, body] of scripts) {
      expect(attributes).toMatch(/\ssrc="\/console\/assets\//);
      expect(body?.trim()).toBe("");
    }
    expect(html).not.toMatch(/<style\b|\sstyle="/);
    expect(html).toContain("<!--console-config-->");
  });

  it("carries its icon inline, so the browser asks the server for no favicon", () => {
    const html = readFileSync(path.join(consoleDistDir, "index.html"), "utf8");
    expect(html).toMatch(/<link rel="icon" href="data:image\/svg\+xml,/);
  });
});
