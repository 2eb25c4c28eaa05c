import { startTestSystem, type TestSystem } from "@fleet/all-in-one/testing";
import { mkdirSync } from "node:fs";
import path from "node:path";
import { loadAllInOneConfig } from "@fleet/all-in-one";
import { freeLoopbackPort, startTestIdp, type TestIdp } from "@fleet/api/testing/idp";
import { ensureConsoleBuilt } from "@fleet/console/build";
import { createTestDatabase, type TestDatabase } from "@fleet/db/testing";
import { eventually } from "@fleet/shared/testing";
import pino from "pino";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHROMIUM_ARGS, watchConsolePage } from "../support/console-browser.ts";
import { testSystemEnv } from "../support/system-env.ts";

/**
 * The tenancy pages of the console (CONTRACT 18, docs/console.md "Customers and members") in
 * Chromium against the whole system started in process, signed in through a real OpenID Connect
 * provider: an MSP owner manages customers and members and invites a technician, who accepts in a
 * browser of their own and works in the MSP's organizations through the switcher. Elements are
 * found by role and accessible name only; any page error or HTTP error answer a step did not expect
 * fails the test. Screenshots land in test/console/screenshots/ (git-ignored).
 */
const SCREENSHOTS = path.join(import.meta.dirname, "screenshots");
const TOP = "owner's organization";
const TECH = "tech@example.test";

let idp: TestIdp;
let db: TestDatabase;
let system: TestSystem;
let browser: Browser;
let base: string;
/** The MSP owner's page and the invited technician's (separate browser contexts: separate cookies). */
let owner: Page;
let tech: Page;
/** The invitation link the Members page showed once. */
let invitationUrl = "";
const problems: string[] = [];
/** Which failed answers the current step expects: `status procedure-or-path`. */
let expectedFailures: string[] = [];

const watch = (page: Page, who: string) =>
  watchConsolePage(page, {
    problems,
    who,
    expected: (status, name) => expectedFailures.includes(`${status} ${name}`),
    // The provider's development pages (another origin, fetching web fonts offline) are not ours.
    ignore: (message) => !message.location().url.startsWith(base),
  });

beforeAll(async () => {
  mkdirSync(SCREENSHOTS, { recursive: true });
  const built = await ensureConsoleBuilt({ info: () => undefined, warn: (m) => problems.push(m) });
  expect(built).not.toBe("failed");
  const port = await freeLoopbackPort();
  base = `http://127.0.0.1:${port}`;
  idp = await startTestIdp({ redirectUris: [`${base}/v1/auth/oidc/callback`] });
  const config = loadAllInOneConfig(
    testSystemEnv({ ...idp.env(), OIDC_DISPLAY_NAME: "Test IdP", PORT: String(port), API_PUBLIC_URL: base }),
  );
  // PGlite, or PostgreSQL with DATABASE_URL.
  db = await createTestDatabase();
  system = await startTestSystem({ config, logger: pino({ level: "silent" }), db });
  browser = await chromium.launch({ executablePath: "/usr/bin/chromium", headless: true, args: CHROMIUM_ARGS });
  owner = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  tech = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  watch(owner, "owner");
  watch(tech, "tech");
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await system?.close();
  await db?.close();
  await idp?.close();
});

/** Runs a journey; on failure both pages as they were are kept as `tenancy-failed-<who>.png`. */
const journey = async (steps: () => Promise<void>) => {
  try {
    await steps();
  } catch (error) {
    await shot(owner, "tenancy-failed-owner").catch(() => undefined);
    await shot(tech, "tenancy-failed-tech").catch(() => undefined);
    if (problems.length > 0 && error instanceof Error) error.message += `\npage problems:\n${problems.join("\n")}`;
    throw error;
  }
  expect(problems).toEqual([]);
};
/** Waits until `read` answers what is expected (asymmetric matchers allowed); else fails showing the last answer. */
const until = async (read: () => Promise<unknown>, expected: unknown) => {
  const matches = async () => {
    try {
      expect(await read()).toEqual(expected);
      return true;
    } catch {
      return false;
    }
  };
  if (!(await eventually(matches, "the expected answer").catch(() => false))) expect(await read()).toEqual(expected);
};
const shot = (page: Page, name: string) =>
  page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
const heading = (page: Page, name: string | RegExp) => page.getByRole("heading", { name, level: 1 });
const nav = (page: Page, name: string) => page.getByRole("navigation", { name: "Main" }).getByRole("link", { name });
const switcher = (page: Page) => page.getByRole("combobox", { name: "Organization" });
/** Chooses an organization in the switcher (options are indented by their depth) and waits for it. */
const switchTo = async (page: Page, name: string, depth: number) => {
  await switcher(page).selectOption({ label: `${"\u2003".repeat(depth)}${name}` });
  await eventually(
    async () => (await switcher(page).locator("option:checked").textContent())?.trim() === name,
    `${name} chosen`,
  );
};
const customerRow = (name: string) =>
  owner.getByRole("table", { name: "Customers" }).getByRole("row", { name: new RegExp(`^${name}\\b`) });
const memberRow = (page: Page, email: string) =>
  page.getByRole("table", { name: "Members" }).getByRole("row", { name: new RegExp(email) });

/** The provider's sign-in from the console's button: its login and consent pages, back to `path`. */
const signIn = async (page: Page, login: string) => {
  await page.getByRole("button", { name: "Sign in with Test IdP" }).click();
  // The provider's own development pages.
  await page.locator('input[name="login"]').fill(login);
  await page.locator('input[name="password"]').fill("any");
  await page.getByRole("button", { name: "Sign-in" }).click();
  await page.getByRole("button", { name: "Continue" }).click();
};

describe("the tenancy pages of the console", () => {
  it(
    "the owner creates, renames and deletes customers; a customer with a child stays (409)",
    () =>
      journey(async () => {
        // No session yet: the console asks for a token once, silently, and shows the sign-in page.
        expectedFailures = ["401 auth.token"];
        await owner.goto(`${base}/console/customers`);
        await heading(owner, "Fleet console").waitFor();
        await signIn(owner, "owner");
        await heading(owner, "Customers").waitFor();
        expect(new URL(owner.url()).pathname).toBe("/console/customers");
        expectedFailures = [];
        await owner.getByText("No customers yet.").waitFor();

        // Create two customers; each shows its router and online counts and the owner's role.
        for (const name of ["Northwind", "Contoso"]) {
          await owner.getByRole("textbox", { name: "Customer name" }).fill(name);
          await owner.getByRole("button", { name: "Add customer" }).click();
          await customerRow(name).waitFor();
        }
        const cells = await customerRow("Northwind").getByRole("cell").allTextContents();
        expect(cells.slice(0, 4)).toEqual(["Northwind", "0", "0", "owner"]);
        await shot(owner, "tenancy-01-customers");

        // Rename one.
        await owner.getByRole("button", { name: "Rename Northwind" }).click();
        await owner.getByRole("textbox", { name: "New name for Northwind" }).fill("Northwind Traders");
        await owner.getByRole("button", { name: "Save" }).click();
        await customerRow("Northwind Traders").waitFor();
        await until(
          () => customerRow("Northwind Traders").getByRole("cell").first().textContent(),
          "Northwind Traders",
        );

        // In Contoso (through the switcher), a customer of its own: Contoso now has something left.
        await switchTo(owner, "Contoso", 1);
        await owner.getByText("No customers yet.").waitFor();
        await owner.getByRole("textbox", { name: "Customer name" }).fill("Contoso Branch");
        await owner.getByRole("button", { name: "Add customer" }).click();
        await customerRow("Contoso Branch").waitFor();
        await switchTo(owner, TOP, 0);
        await customerRow("Contoso").waitFor();

        // Deleting Contoso is refused with the server's message; Northwind Traders goes.
        expectedFailures = ["409 organizations.delete"];
        await owner.getByRole("button", { name: "Delete customer Contoso" }).click();
        await until(() => owner.getByRole("alert").textContent(), expect.stringMatching(/child organization/i));
        await shot(owner, "tenancy-02-delete-refused");
        expectedFailures = [];
        await owner.getByRole("button", { name: "Delete customer Northwind Traders" }).click();
        await customerRow("Northwind Traders").waitFor({ state: "detached" });
        await customerRow("Contoso").waitFor();
      }),
    120_000,
  );

  it(
    "the owner invites with a role, sees and revokes pending invitations",
    () =>
      journey(async () => {
        await nav(owner, "Members").click();
        await heading(owner, `Members of ${TOP}`).waitFor();
        await until(
          () => memberRow(owner, "owner@example.test").getByRole("cell").allTextContents(),
          ["owner@example.test", expect.stringContaining("owner"), "this organization", "Remove"],
        );

        for (const [email, role] of [
          [TECH, "technician"],
          ["gone@example.test", "viewer"],
        ] as const) {
          await owner.getByRole("textbox", { name: "Email" }).fill(email);
          await owner.getByRole("combobox", { name: "Role", exact: true }).selectOption(role);
          await owner.getByRole("button", { name: "Send invitation" }).click();
          await owner.getByRole("heading", { name: `Invitation for ${email}` }).waitFor();
          const link = await owner.getByRole("textbox", { name: "Invitation link" }).inputValue();
          expect(link).toMatch(new RegExp(`^${base}/console/invitations/[^/]+$`));
          if (email === TECH) invitationUrl = link;
          const pending = owner.getByRole("table", { name: "Pending invitations" }).getByRole("row", { name: email });
          await pending.waitFor();
          expect((await pending.getByRole("cell").allTextContents()).slice(0, 2)).toEqual([email, role]);
        }
        await shot(owner, "tenancy-03-invitations");

        // Revoke one: the other stays pending. The link is shown once: not after a reload.
        await owner.getByRole("button", { name: "Revoke the invitation of gone@example.test" }).click();
        const pending = owner.getByRole("table", { name: "Pending invitations" });
        await pending.getByRole("row", { name: "gone@example.test" }).waitFor({ state: "detached" });
        await pending.getByRole("row", { name: TECH }).waitFor();
        await owner.reload();
        await heading(owner, `Members of ${TOP}`).waitFor();
        await pending.getByRole("row", { name: TECH }).waitFor();
        expect(await owner.getByRole("textbox", { name: "Invitation link" }).count()).toBe(0);
      }),
    120_000,
  );

  it(
    "the invited person signs in, accepts and works there; the owner changes their role",
    () =>
      journey(async () => {
        // Not signed in: the invitation page asks for the provider's sign-in and comes back to it.
        expectedFailures = ["401 auth.token"];
        await tech.goto(invitationUrl);
        await heading(tech, "Fleet console").waitFor();
        await signIn(tech, "tech");
        await heading(tech, "Invitation").waitFor();
        expect(new URL(tech.url()).pathname).toBe(new URL(invitationUrl).pathname);
        expectedFailures = [];
        await tech.getByRole("button", { name: "Accept the invitation" }).click();

        // Straight into the organization joined, chosen in the switcher beside their own.
        await heading(tech, "Fleet").waitFor();
        await until(async () => (await switcher(tech).locator("option:checked").textContent())?.trim(), TOP);
        const options = (await switcher(tech).getByRole("option").allTextContents()).map((o) => o.trim());
        expect(options).toEqual(expect.arrayContaining([TOP, "Contoso", "Contoso Branch", "tech's organization"]));
        await shot(tech, "tenancy-04-joined");

        // A technician acts in the MSP's customers through the role held above them.
        await switchTo(tech, "Contoso", 1);
        await nav(tech, "Members").click();
        await heading(tech, "Members of Contoso").waitFor();
        for (const email of ["owner@example.test", TECH]) {
          await until(
            async () => (await memberRow(tech, email).getByRole("cell").allTextContents()).slice(2, 3),
            [`inherited from ${TOP}`],
          );
        }
        await until(() => memberRow(tech, TECH).getByRole("cell").nth(1).textContent(), "technician");
        await nav(tech, "Fleet").click();
        await heading(tech, "Fleet").waitFor();

        // The owner sees the new member (no longer pending) and makes them a viewer.
        await owner.reload();
        await heading(owner, `Members of ${TOP}`).waitFor();
        const role = owner.getByRole("combobox", { name: `Role of ${TECH}` });
        await until(() => role.inputValue(), "technician");
        expect(await owner.getByRole("table", { name: "Pending invitations" }).count()).toBe(0);
        await role.selectOption("viewer");
        await until(() => role.inputValue(), "viewer");
        await owner.reload();
        await until(() => owner.getByRole("combobox", { name: `Role of ${TECH}` }).inputValue(), "viewer");
        await shot(owner, "tenancy-05-members");

        // In Contoso, the owner's Members page says where each role comes from.
        await switchTo(owner, "Contoso", 1);
        await heading(owner, "Members of Contoso").waitFor();
        for (const [email, held] of [
          ["owner@example.test", "owner"],
          [TECH, "viewer"],
        ] as const) {
          await until(
            async () => (await memberRow(owner, email).getByRole("cell").allTextContents()).slice(0, 3),
            [email, held, `inherited from ${TOP}`],
          );
        }
        await shot(owner, "tenancy-06-inherited");
      }),
    120_000,
  );
});
