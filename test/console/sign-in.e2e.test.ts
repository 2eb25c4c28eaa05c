import { startTestSystem, type TestSystem } from "@fleet/all-in-one/testing";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { loadAllInOneConfig } from "@fleet/all-in-one";
import { freeLoopbackPort, startTestIdp, type TestIdp } from "@fleet/api/testing/idp";
import { ensureConsoleBuilt } from "@fleet/console/build";
import { createTestDatabase, type TestDatabase } from "@fleet/db/testing";
import pino from "pino";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testSystemEnv } from "../support/system-env.ts";

/**
 * Signing in to the console through a real OpenID Connect provider (docs/console.md "Signing in"),
 * in Chromium against the whole system started in process: the provider's button, its login and
 * consent pages, back to the fleet; the token lives in memory only, a reload mints a new one from
 * the session cookie, and signing out ends the session.
 */
let idp: TestIdp;
let db: TestDatabase;
let system: TestSystem;
let context: BrowserContext;
let page: Page;
let profile: string;
let base: string;
const problems: string[] = [];
/** Failed answers the current step expects (`status path-or-procedure`). */
let expectedFailures: string[] = [];

beforeAll(async () => {
  const built = await ensureConsoleBuilt({ info: () => undefined, warn: (m) => problems.push(m) });
  expect(built).not.toBe("failed");
  const port = await freeLoopbackPort();
  base = `http://127.0.0.1:${port}`;
  idp = await startTestIdp({ redirectUris: [`${base}/v1/auth/oidc/callback`] });
  const config = loadAllInOneConfig(
    testSystemEnv({
      ...idp.env(),
      OIDC_DISPLAY_NAME: "Test IdP",
      PORT: String(port),
      API_PUBLIC_URL: base,
    }),
  );
  db = await createTestDatabase();
  system = await startTestSystem({ config, logger: pino({ level: "silent" }), db });
  profile = mkdtempSync(path.join(tmpdir(), "h36-sign-in-chromium-"));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-sync"],
  });
  page = context.pages()[0] ?? (await context.newPage());
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  page.on("response", (response) => {
    if (response.status() < 400) return;
    const url = new URL(response.url());
    const name = url.pathname.startsWith("/trpc/") ? url.pathname.slice(6) : url.pathname;
    if (!expectedFailures.includes(`${response.status()} ${name}`)) {
      problems.push(`unexpected ${response.status()} from ${name}`);
    }
  });
}, 120_000);

afterAll(async () => {
  await context?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
  await system?.close();
  await db?.close();
  await idp?.close();
});

const heading = (name: string) => page.getByRole("heading", { name, level: 1 });
const stored = () =>
  page.evaluate(() => {
    const storage = globalThis as unknown as { sessionStorage: { length: number }; localStorage: { length: number } };
    return storage.sessionStorage.length + storage.localStorage.length;
  });

describe("the console signs in through the identity provider", () => {
  it("button, provider, fleet; token in memory only; reload; sign out ends the session", async () => {
    // No session yet: the console asks for a token once, silently, and shows the sign-in page.
    expectedFailures = ["401 auth.token"];
    await page.goto(`${base}/console/`);
    await heading("Fleet console").waitFor();
    await page.getByRole("button", { name: "Sign in with Test IdP" }).click();

    // The provider's own development pages.
    await page.locator('input[name="login"]').fill("operator");
    await page.locator('input[name="password"]').fill("any");
    await page.getByRole("button", { name: "Sign-in" }).click();
    await page.getByRole("button", { name: "Continue" }).click();

    // Back in the console, signed in, with nothing in the browser's storage.
    await heading("Fleet").waitFor();
    expect(new URL(page.url()).pathname).toBe("/console/");
    expect(await stored()).toBe(0);
    const cookies = await context.cookies(base);
    expect(cookies.find((c) => c.name === "fleet_session")).toMatchObject({ httpOnly: true, sameSite: "Lax" });

    // A reload keeps nothing but the cookie: the console mints a new token from it.
    await page.reload();
    await heading("Fleet").waitFor();
    expect(await stored()).toBe(0);

    // Signing out ends the session: a reload shows the sign-in page again.
    await page.getByRole("button", { name: "Sign out" }).click();
    await heading("Fleet console").waitFor();
    await page.reload();
    await page.getByRole("button", { name: "Sign in with Test IdP" }).waitFor();
    expect(problems).toEqual([]);
  }, 120_000);
});
