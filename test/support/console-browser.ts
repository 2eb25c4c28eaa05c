import type { ConsoleMessage, Page } from "playwright-core";

/** Chromium as the console tests run it: headless in a container, nothing fetched from outside. */
export const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export interface PageWatch {
  /** Where what went wrong is written; a journey ends by expecting it empty. */
  problems: string[];
  /** Whether an HTTP error answer (status, tRPC procedure or REST path) is one the journey expects now. */
  expected: (status: number, name: string) => boolean;
  /** A console error that is not the console's (another origin's page, a simulated offline). */
  ignore?: (message: ConsoleMessage) => boolean;
  /** Which page, when a journey drives several. */
  who?: string;
}

/** Notes every page error, console error and unexpected HTTP error answer of `page` in `problems`. */
export const watchConsolePage = (page: Page, { problems, expected, ignore, who }: PageWatch): void => {
  const tag = who === undefined ? "" : `${who}: `;
  page.on("pageerror", (error) => problems.push(`${tag}page error: ${error.message}`));
  page.on("console", (message) => {
    if (message.type() !== "error") return;
    // The browser reports every HTTP error answer here too; those are judged one by one below.
    if (message.text().startsWith("Failed to load resource: the server responded with a status of")) return;
    if (ignore?.(message)) return;
    problems.push(`${tag}console error: ${message.text()} (${message.location().url})`);
  });
  page.on("response", (response) => {
    if (response.status() < 400) return;
    const url = new URL(response.url());
    const names = url.pathname.startsWith("/trpc/") ? url.pathname.slice(6).split(",") : [url.pathname];
    if (!names.every((name) => expected(response.status(), name))) {
      problems.push(`${tag}unexpected ${response.status()} from ${url.pathname}`);
    }
  });
};
