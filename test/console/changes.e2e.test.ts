import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { loadAllInOneConfig } from "@fleet/all-in-one";
import { startTestSystem, type TestSystem } from "@fleet/all-in-one/testing";
import { ensureConsoleBuilt } from "@fleet/console/build";
import { createTestDatabase, type TestDatabase } from "@fleet/db/testing";
import { eventually } from "@fleet/shared/testing";
import pino from "pino";
import { type BrowserContext, chromium, type Locator, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHROMIUM_ARGS, watchConsolePage } from "../support/console-browser.ts";
import { testSystemEnv } from "../support/system-env.ts";

/**
 * The Changes page of the console (docs/console.md "Changes", docs/api.md "Changes") in a real
 * Chromium against the whole system started like `npm start` (in process, in memory): a router is
 * enrolled (never adopted, so offline), a script change for it is refused with the server's errors
 * beside its fields, composed again with approval asked, previewed as that router would run it,
 * not offered for approval to its author, cancelled; a second one runs at once, and its router's
 * result (skipped, offline) and the change's end show without a reload. Elements are found by role
 * and accessible name only; any console error of the page, or HTTP error answer the journey did
 * not expect, fails it. Screenshots land in test/console/screenshots/ (git-ignored), `changes-`.
 */
const SCREENSHOTS = path.join(import.meta.dirname, "screenshots");

let db: TestDatabase;
let system: TestSystem;
let context: BrowserContext;
let page: Page;
let profile: string;

/** Which failed answers the current step expects: `status procedure`. */
let expectedFailures: string[] = [];
const problems: string[] = [];

beforeAll(async () => {
  mkdirSync(SCREENSHOTS, { recursive: true });
  const built = await ensureConsoleBuilt({ info: () => undefined, warn: (m) => problems.push(m) });
  expect(built).not.toBe("failed");
  const config = loadAllInOneConfig(testSystemEnv({ ENTRY_POINT_PORTS: "63870-63879" }));
  // PGlite, or PostgreSQL with DATABASE_URL.
  db = await createTestDatabase();
  system = await startTestSystem({ config, logger: pino({ level: "silent" }), db });

  profile = mkdtempSync(path.join(tmpdir(), "h39c-changes-chromium-"));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: "/usr/bin/chromium",
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1280, height: 900 },
  });
  page = context.pages()[0] ?? (await context.newPage());
  watchConsolePage(page, { problems, expected: (status, name) => expectedFailures.includes(`${status} ${name}`) });
}, 120_000);

afterAll(async () => {
  await context?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
  await system?.close();
  await db?.close();
});

const shot = (name: string) => page.screenshot({ path: path.join(SCREENSHOTS, `changes-${name}.png`), fullPage: true });
const heading = (name: string) => page.getByRole("heading", { name, level: 1 });
const nav = (name: string) => page.getByRole("navigation", { name: "Main" }).getByRole("link", { name });
/** The accessible description of a control: the text of what `aria-describedby` names. */
const description = (locator: Locator) =>
  locator.evaluate((el: BrowserElement) =>
    (el.getAttribute("aria-describedby") ?? "")
      .split(" ")
      .map((id) => el.ownerDocument.getElementById(id)?.textContent ?? "")
      .join(" "),
  );
/** The little of the DOM the description reads (this file is compiled without the DOM library). */
interface BrowserElement {
  getAttribute(name: string): string | null;
  ownerDocument: { getElementById(id: string): { textContent: string | null } | null };
}
const changeRow = (name: string) =>
  page.getByRole("table", { name: "Changes" }).getByRole("row", { name: new RegExp(`^${name}\\b`) });

/** Picks the router through the form's search and fills the rest of a script change. */
const compose = async (name: string, script: string) => {
  const form = page.getByRole("form", { name: "Compose a change" });
  await form.getByRole("textbox", { name: "Change name" }).fill(name);
  await form.getByRole("textbox", { name: /^Script/ }).fill(script);
  if ((await form.getByRole("list", { name: "Chosen routers" }).count()) === 0) {
    await form.getByRole("searchbox", { name: "Find routers" }).fill("Edge");
    await form.getByRole("button", { name: "Add Edge A" }).click();
    await form.getByRole("list", { name: "Chosen routers" }).getByText("Edge A").waitFor();
  }
  return form;
};

describe("the console's Changes page", () => {
  it("composes a script change, shows the server's errors, previews it, and follows it to its end", async () => {
    try {
      await page.goto(`${system.api.url}/console/`);
      await page.getByRole("textbox", { name: "Email" }).fill(`changes-${crypto.randomUUID()}@example.com`);
      await page.getByRole("button", { name: "Sign in with email" }).click();
      await heading("Fleet").waitFor();

      // A billing account, then one router (enrolled, never adopted: offline).
      expectedFailures = ["422 account.get"];
      await nav("Billing").click();
      await page.getByRole("heading", { name: "Create the billing account" }).waitFor();
      await page.getByRole("textbox", { name: "Company or name" }).fill("Acme Networks");
      await page.getByRole("textbox", { name: "Billing email" }).fill("billing@acme.example");
      await page.getByRole("textbox", { name: "Country" }).fill("DE");
      await page.getByRole("button", { name: "Create account" }).click();
      await page.getByRole("heading", { name: "Billing account" }).waitFor();
      expectedFailures = [];
      await nav("Enroll a router").click();
      await page.getByRole("textbox", { name: "Name (optional)" }).fill("Edge A");
      await page.getByRole("button", { name: "Enroll router" }).click();
      await page.getByRole("heading", { name: "Adopt Edge A" }).waitFor();

      await nav("Changes").click();
      await heading("Changes").waitFor();
      await page.getByText("No changes yet.").waitFor();

      // No name and an unknown placeholder: both errors beside their fields, nothing stored.
      expectedFailures = ["422 changes.create"];
      let form = await compose("", "/system identity set name={{serial}}");
      const name = form.getByRole("textbox", { name: "Change name" });
      const script = form.getByRole("textbox", { name: /^Script/ });
      await form.getByRole("button", { name: "Create change" }).click();
      await eventually(async () => (await script.getAttribute("aria-invalid")) === "true", "the script error");
      expect(await description(script)).toMatch(/unknown placeholders: \{\{serial\}\}/);
      expect(await name.getAttribute("aria-invalid")).toBe("true");
      expect(await form.getByRole("textbox", { name: "Guard seconds" }).getAttribute("aria-invalid")).toBeNull();
      await shot("01-field-errors");
      // Guard seconds one below the limit: its own error.
      await form.getByRole("textbox", { name: "Guard seconds" }).fill("59");
      form = await compose("Set identity", "/system identity set name={{name}}");
      await form.getByRole("button", { name: "Create change" }).click();
      const guard = form.getByRole("textbox", { name: "Guard seconds" });
      await eventually(async () => (await guard.getAttribute("aria-invalid")) === "true", "the guard error");
      expect(await description(guard)).toMatch(/between 60 and 3600/);
      expect(await script.getAttribute("aria-invalid")).toBeNull();
      const [none] = await db.query<{ n: number }>("select count(*)::int as n from changes");
      expect(none?.n).toBe(0);
      expectedFailures = [];

      // Asking for approval: created, previewed as Edge A would run it, not offered to its author.
      await guard.fill("300");
      await form.getByRole("checkbox", { name: "Requires approval by another person" }).check();
      await form.getByRole("button", { name: "Create change" }).click();
      await heading("Set identity").waitFor();
      const state = page.getByRole("status", { name: "Change state" });
      await state.getByText("Awaiting approval").waitFor();
      const rendered = page.getByRole("textbox", { name: "Rendered script" });
      await eventually(
        async () => (await rendered.inputValue()) === '/system identity set name="Edge A"',
        "the preview for Edge A",
      );
      expect(await page.getByRole("combobox", { name: "Preview for router" }).inputValue()).not.toBe("");
      await page.getByText(/You made this change/).waitFor();
      expect(await page.getByRole("button", { name: "Approve" }).count()).toBe(0);
      await shot("02-preview");

      // Cancelled: its router's step is cancelled too.
      await page.getByRole("button", { name: "Cancel change" }).click();
      const results = page.getByRole("table", { name: "Router results" });
      await results.getByRole("row", { name: /Edge A.*Cancelled/ }).waitFor();
      await state.getByText("Cancelled").waitFor();

      // A change that runs at once: its offline router is skipped and it completes, seen live.
      await nav("Changes").click();
      await changeRow("Set identity").getByText("Cancelled", { exact: true }).waitFor();
      form = await compose("Log name", ":log info {{name}}");
      await form.getByRole("button", { name: "Create change" }).click();
      await heading("Log name").waitFor();
      await results.getByRole("row", { name: /Edge A.*Skipped \(offline\)/ }).waitFor({ timeout: 30_000 });
      await state.getByText("Completed").waitFor({ timeout: 30_000 });
      await page.getByRole("list", { name: "Routers per state" }).getByText("skipped (offline)").waitFor();
      await shot("03-completed");

      // Both listed, newest first, with their states and counts.
      await nav("Changes").click();
      await heading("Changes").waitFor();
      await changeRow("Log name").getByText("Completed", { exact: true }).waitFor();
      await changeRow("Log name").getByText("1 skipped (offline)").waitFor();
      const rows = page.getByRole("table", { name: "Changes" }).getByRole("rowheader");
      expect(await rows.allTextContents()).toEqual(["Log name", "Set identity"]);
      await shot("04-list");

      const stored = await db.query<{ state: string }>("select state from changes order by created_at");
      expect(stored.map((c) => c.state)).toEqual(["cancelled", "completed"]);

      // Paging: 50 changes fit one page; the 51st is behind "Show 50 more" (made through the API,
      // waiting for approval so that nothing runs).
      const token = await page.evaluate(
        () =>
          (globalThis as unknown as { sessionStorage: { getItem(key: string): string | null } }).sessionStorage.getItem(
            "fleet.console.token",
          ) ?? "",
      );
      const [router] = await db.query<{ id: string }>("select id from routers");
      const createChange = async (n: number) => {
        const response = await fetch(`${system.api.url}/api/changes`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: JSON.stringify({
            name: `Batch ${String(n).padStart(2, "0")}`,
            kind: "script",
            script: ":log info batch",
            routers: { router_ids: [router?.id] },
            requires_approval: true,
          }),
        });
        expect(response.status).toBe(201);
      };
      for (let n = 3; n <= 50; n++) await createChange(n);
      const listed = page.getByRole("table", { name: "Changes" }).getByRole("rowheader");
      await page.reload();
      await changeRow("Batch 50").waitFor();
      expect(await listed.count()).toBe(50);
      expect(await page.getByRole("button", { name: "Show 50 more" }).count()).toBe(0);
      await createChange(51);
      await page.reload();
      await changeRow("Batch 51").waitFor();
      expect(await listed.count()).toBe(50);
      await page.getByRole("button", { name: "Show 50 more" }).click();
      await changeRow("Set identity").waitFor();
      expect(await listed.count()).toBe(51);
      expect(await page.getByRole("button", { name: "Show 50 more" }).count()).toBe(0);

      // A change that is not this organization's: not found, and nothing else.
      expectedFailures = ["404 changes.get"];
      await page.goto(`${system.api.url}/console/changes/${crypto.randomUUID()}`);
      await page.getByText(/Could not load the change: Change not found/).waitFor();
      expectedFailures = [];
      expect(problems).toEqual([]);
    } catch (error) {
      await shot("failed").catch(() => undefined);
      if (problems.length > 0 && error instanceof Error) error.message += `\npage problems:\n${problems.join("\n")}`;
      throw error;
    }
  }, 180_000);
});
