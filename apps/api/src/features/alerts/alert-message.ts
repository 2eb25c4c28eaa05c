import { zonedParts } from "@fleet/shared";

/**
 * A notification in neutral form, stored with its delivery (`message`): plain text only. Each
 * channel type renders it at send time and escapes every piece of text for its own markup (Slack
 * mrkdwn, Teams markdown, Telegram HTML, email HTML), so a router or organization name can never
 * break or forge a message. Nothing secret is ever put in one (docs/api.md "Alerts and maintenance
 * windows").
 */
export interface AlertMessage {
  kind: "offline" | "recovered" | "event" | "summary" | "storm" | "test";
  /** One line: "Router offline: branch-1" (plain text). */
  title: string;
  organization: string;
  /** Further lines (plain text), each with an optional link to the router in the console. */
  lines: Array<{ text: string; link?: string }>;
  /** The console link of the router the message is about, when there is one. */
  link?: string;
  /** PagerDuty Events v2: what this message does to the incident. */
  pagerduty?: { action: "trigger" | "resolve"; dedupKey: string; severity: "critical" | "error" | "warning" | "info" };
  /** ISO 8601 of the event (PagerDuty's `timestamp`). */
  at: string;
}

const pad = (n: number) => String(n).padStart(2, "0");

/** "2026-12-01 10:00 Europe/Paris": the time people read, in the rule's zone (UTC without one). */
export const formatWhen = (at: Date, timeZone = "UTC"): string => {
  const p = zonedParts(at, timeZone);
  return `${p.year}-${pad(p.month)}-${pad(p.day)} ${pad(p.hour)}:${pad(p.minute)} ${timeZone}`;
};

/** Everything the message says, as plain text lines (email text part, Teams summary). */
export const plainText = (m: AlertMessage): string =>
  [m.title, ...m.lines.map((l) => (l.link ? `${l.text} ${l.link}` : l.text))].join("\n");

// ---- Slack: incoming webhook {"text", "blocks"} with mrkdwn ------------------------------------

/** Slack mrkdwn: &, < and > are the control characters (Slack "Formatting text for app surfaces"). */
export const escapeSlack = (text: string): string =>
  text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");

const slackLine = (text: string, link?: string) =>
  link ? `${escapeSlack(text)} <${escapeSlack(link)}|open>` : escapeSlack(text);

export const renderSlack = (m: AlertMessage): { text: string; blocks: unknown[] } => {
  const body = [`*${escapeSlack(m.title)}*`, ...m.lines.map((l) => slackLine(l.text, l.link))].join("\n");
  return {
    text: plainText(m).slice(0, 3000),
    blocks: [{ type: "section", text: { type: "mrkdwn", text: body.slice(0, 3000) } }],
  };
};

// ---- Microsoft Teams: a MessageCard whose text holds the same words ------------------------------

/**
 * Teams markdown: HTML's three as entities, and a backslash only where a name would make markup:
 * links and code (`[`, `]`, a backquote, a backslash), emphasis (`*`, `~`, a `_` not inside a word)
 * and a line that would start a heading or a list. `rtr-1.example (core)` arrives as written.
 */
export const escapeTeams = (text: string): string =>
  text
    .replaceAll("&", "&amp;")
    .replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;")
    .replace(/[\\`*[\]~]|(?<![\p{L}\p{N}])_|_(?![\p{L}\p{N}])/gu, (c) => `\\${c}`)
    .replace(/^(\s*)([#+-])/, "$1\\$2")
    .replace(/^(\s*\d+)([.)])/, "$1\\$2");

export const renderTeams = (m: AlertMessage): Record<string, unknown> => ({
  "@type": "MessageCard",
  "@context": "https://schema.org/extensions",
  summary: m.title.slice(0, 200),
  themeColor: m.kind === "recovered" ? "2EB886" : m.kind === "test" ? "439FE0" : "D00000",
  title: escapeTeams(m.title),
  text: m.lines
    .map((l) => (l.link ? `${escapeTeams(l.text)} [open](${l.link.replaceAll(")", "%29")})` : escapeTeams(l.text)))
    .join("\n\n"),
});

// ---- Telegram: sendMessage with parse_mode HTML -------------------------------------------------

/** Telegram HTML: &, < and > as entities (and " inside attributes). */
export const escapeTelegram = (text: string): string =>
  text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;").replaceAll('"', "&quot;");

export const renderTelegram = (m: AlertMessage, chatId: string): Record<string, unknown> => ({
  chat_id: chatId,
  text: [
    `<b>${escapeTelegram(m.title)}</b>`,
    ...m.lines.map((l) =>
      l.link ? `${escapeTelegram(l.text)} <a href="${escapeTelegram(l.link)}">open</a>` : escapeTelegram(l.text),
    ),
  ]
    .join("\n")
    .slice(0, 4096),
  parse_mode: "HTML",
  disable_web_page_preview: true,
});

// ---- PagerDuty Events API v2 ---------------------------------------------------------------------

export const renderPagerDuty = (m: AlertMessage, routingKey: string): Record<string, unknown> => {
  const pd = m.pagerduty ?? { action: "trigger" as const, dedupKey: `fleet-${m.kind}`, severity: "info" as const };
  if (pd.action === "resolve") return { routing_key: routingKey, event_action: "resolve", dedup_key: pd.dedupKey };
  return {
    routing_key: routingKey,
    event_action: "trigger",
    dedup_key: pd.dedupKey,
    payload: {
      summary: `${m.title} (${m.organization})`.slice(0, 1024),
      source: m.organization.slice(0, 255) || "fleet",
      severity: pd.severity,
      timestamp: m.at,
      custom_details: { lines: m.lines.map((l) => l.text) },
    },
    ...(m.link ? { links: [{ href: m.link, text: "Router in the console" }] } : {}),
  };
};

// ---- Email ---------------------------------------------------------------------------------------

export const escapeHtml = (text: string): string =>
  text
    .replaceAll("&", "&amp;")
    .replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;")
    .replaceAll("'", "&#39;");

export const renderEmail = (m: AlertMessage): { subject: string; text: string; html: string } => ({
  // A header is one line: whatever a name holds, the subject never grows a second one.
  subject: `[${m.organization}] ${m.title}`.replace(/[\r\n]+/g, " ").slice(0, 250),
  text: plainText(m),
  html: `<p><strong>${escapeHtml(m.title)}</strong></p>${m.lines
    .map((l) => `<p>${escapeHtml(l.text)}${l.link ? ` <a href="${escapeHtml(l.link)}">open</a>` : ""}</p>`)
    .join("")}`,
});

// ---- One-line summaries of other events ------------------------------------------------------------

/** A value of an audit entry's details as short plain text ("" when absent or not a scalar). */
const detail = (details: Record<string, unknown>, ...keys: string[]): string => {
  for (const key of keys) {
    const value = details[key];
    if (typeof value === "string" || typeof value === "number" || typeof value === "boolean") {
      // Details may hold what a router or a script wrote: one short line, no control characters.
      const text = String(value)
        // biome-ignore lint/suspicious/noControlCharactersInRegex: they are what is removed
        .replace(/[\u0000-\u001f\u007f]+/g, " ")
        .trim();
      if (text) return text.length > 120 ? `${text.slice(0, 119)}…` : text;
    }
  }
  return "";
};

const OUTCOMES = ["succeeded", "failed", "reverted", "skipped_offline"];
const rank = (state: string) => (OUTCOMES.includes(state) ? OUTCOMES.indexOf(state) : OUTCOMES.length);

/**
 * What an event other than offline/online says, in one line, from its audit details: the fleet
 * changes' `change.*` (name, error or reason, counts); any other action by its name
 * (`router.resource` has its own message in alert-engine.ts). `subject` is " on <router>" or "".
 */
export const eventSummary = (action: string, details: Record<string, unknown>, subject: string): string => {
  if (action.startsWith("change.")) {
    const name = detail(details, "name", "change_name");
    const change = name ? `Change "${name}"` : "A change";
    const why = detail(details, "error", "reason", "message");
    const outcome = action
      .slice("change.".length)
      .replace(/^router\./, "")
      .replaceAll("_", " ");
    const counts =
      details.counts && typeof details.counts === "object" ? (details.counts as Record<string, unknown>) : {};
    // Stored details come back with their keys reordered (jsonb): outcomes in a fixed order.
    const tally = Object.keys(counts)
      .sort((a, b) => rank(a) - rank(b) || a.localeCompare(b))
      .slice(0, 6)
      .map((state) => `${detail(counts, state)} ${state.replaceAll("_", " ")}`)
      .filter((t) => /^\d/.test(t))
      .join(", ");
    return `${change} ${outcome}${subject}${why ? `: ${why}` : ""}${tally ? ` (${tally})` : ""}`;
  }
  return `${action}${subject}`;
};
