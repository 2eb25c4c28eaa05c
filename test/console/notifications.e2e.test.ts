import { startTestSystem, type TestSystem } from "@fleet/all-in-one/testing";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { loadAllInOneConfig } from "@fleet/all-in-one";
import { ensureConsoleBuilt } from "@fleet/console/build";
import { createTestDatabase, type TestDatabase } from "@fleet/db/testing";
import { eventually } from "@fleet/shared/testing";
import pino from "pino";
import { type BrowserContext, chromium, type Locator, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHROMIUM_ARGS, watchConsolePage } from "../support/console-browser.ts";
import { testSystemEnv } from "../support/system-env.ts";

/**
 * The Notifications page of the console (docs/console.md, docs/api.md "Alerts and maintenance
 * windows") in a real Chromium against the whole system started like `npm start` (in process, in
 * memory): a Slack-type channel pointing at a receiver on loopback, its test send seen in its
 * delivery log, a rule, a maintenance window, and the server's field error beside its field.
 * Elements are found by role and accessible name only; any console error of the page, or HTTP
 * error answer the journey did not expect, fails it. Screenshots land in test/console/screenshots/
 * (git-ignored), prefixed `notifications-`.
 */
const SCREENSHOTS = path.join(import.meta.dirname, "screenshots");

let db: TestDatabase;
let system: TestSystem;
/** A Slack incoming webhook on loopback: answers 200 "ok" and keeps each body. */
let receiver: Server;
let receiverUrl: string;
const received: Array<{ path: string; body: Record<string, unknown> }> = [];
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
  const config = loadAllInOneConfig(testSystemEnv({ WEBHOOK_ALLOW_PRIVATE: "true", ENTRY_POINT_PORTS: "63840-63849" }));
  // PGlite, or PostgreSQL with DATABASE_URL.
  db = await createTestDatabase();
  system = await startTestSystem({ config, logger: pino({ level: "silent" }), db });
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      received.push({ path: req.url ?? "", body: JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}") });
      res.writeHead(200, { "content-type": "text/plain" }).end("ok");
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  const address = receiver.address();
  receiverUrl = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}/services/T0/B0/x`;

  profile = mkdtempSync(path.join(tmpdir(), "f37-notifications-chromium-"));
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
  receiver?.close();
});

const shot = (name: string) =>
  page.screenshot({ path: path.join(SCREENSHOTS, `notifications-${name}.png`), fullPage: true });
const nav = (name: string) => page.getByRole("navigation", { name: "Main" }).getByRole("link", { name });
const form = (name: string) => page.getByRole("form", { name });
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

describe("the console's Notifications page", () => {
  it("adds a Slack channel and sees its test delivered, adds a rule and a window, shows a field error", async () => {
    try {
      await page.goto(`${system.api.url}/console/`);
      await page.getByRole("textbox", { name: "Email" }).fill(`notify-${crypto.randomUUID()}@example.com`);
      await page.getByRole("button", { name: "Sign in with email" }).click();
      await page.getByRole("heading", { name: "Fleet", level: 1 }).waitFor();
      await nav("Notifications").click();
      await page.getByRole("heading", { name: "Notifications", level: 1 }).waitFor();
      await page.getByText("No channels yet.").waitFor();
      await form("Add an alert rule").getByText("Add a channel above first.").waitFor();

      // A Slack channel at the loopback receiver.
      const channels = form("Add a channel");
      await channels.getByRole("textbox", { name: "Channel name" }).fill("NOC Slack");
      await channels.getByRole("combobox", { name: "Type" }).selectOption({ label: "Slack" });
      await channels.getByRole("textbox", { name: "Incoming webhook URL" }).fill(receiverUrl);
      await channels.getByRole("button", { name: "Add channel" }).click();
      const card = page.getByRole("article", { name: "Channel NOC Slack" });
      await card.getByRole("heading", { name: "NOC Slack" }).waitFor();

      // Its test send reaches the receiver and shows in its delivery log as sent.
      await card.getByRole("button", { name: "Send test message" }).click();
      const log = card.getByRole("table", { name: "Deliveries of NOC Slack" });
      await log.getByRole("row", { name: /notification\.test.*sent/ }).waitFor({ timeout: 30_000 });
      await eventually(() => received.length === 1, "the test message at the receiver");
      expect(received[0]?.path).toBe("/services/T0/B0/x");
      expect(String(received[0]?.body.text)).toContain("Test message for channel NOC Slack");
      await shot("01-channel-tested");

      // A rule over that channel.
      const rules = form("Add an alert rule");
      expect(await rules.getByText("Add a channel above first.").count()).toBe(0);
      await rules.getByRole("textbox", { name: "Rule name" }).fill("Sites down");
      await rules.getByRole("textbox", { name: "Minimum offline seconds" }).fill("120");
      await rules.getByRole("checkbox", { name: "NOC Slack" }).check();
      await rules.getByRole("button", { name: "Add rule" }).click();
      const ruleList = page.getByRole("region", { name: "Alert rules" }).getByRole("listitem");
      await ruleList.filter({ hasText: "Sites down" }).filter({ hasText: "after 120 s" }).waitFor();

      // A window that ends before it starts: the server's error beside "Ends at", nothing stored.
      expectedFailures = ["422 maintenanceWindows.create"];
      const windows = form("Add a maintenance window");
      const name = windows.getByRole("textbox", { name: "Window name" });
      const startsAt = windows.getByRole("textbox", { name: "Starts at (ISO 8601)" });
      const endsAt = windows.getByRole("textbox", { name: "Ends at (ISO 8601)" });
      await name.fill("Core upgrade");
      await startsAt.fill("2026-12-02T02:00:00Z");
      await endsAt.fill("2026-12-01T22:00:00Z");
      await windows.getByRole("button", { name: "Add window" }).click();
      await eventually(async () => (await endsAt.getAttribute("aria-invalid")) === "true", "the ends_at error");
      expect(await description(endsAt)).toMatch(/after starts_at/);
      expect(await startsAt.getAttribute("aria-invalid")).toBeNull();
      expect(await name.inputValue()).toBe("Core upgrade");
      await shot("02-window-field-error");
      expectedFailures = [];

      // Corrected, it is added and listed.
      await endsAt.fill("2026-12-02T04:00:00Z");
      await windows.getByRole("button", { name: "Add window" }).click();
      await page
        .getByRole("region", { name: "Maintenance windows" })
        .getByRole("listitem")
        .filter({ hasText: "Core upgrade" })
        .waitFor();
      await eventually(async () => (await endsAt.getAttribute("aria-invalid")) === null, "the error cleared");
      await shot("03-rule-and-window");

      const [stored] = await db.query<{ n: number }>("select count(*)::int as n from maintenance_windows");
      expect(stored?.n).toBe(1);
      expect(problems).toEqual([]);
    } catch (error) {
      await shot("failed").catch(() => undefined);
      if (problems.length > 0 && error instanceof Error) error.message += `\npage problems:\n${problems.join("\n")}`;
      throw error;
    }
  }, 120_000);
});
