/**
 * `.env.example` is generated from the one configuration table, docs/operations.md
 * "Configuration", so the two never disagree: `npm run env:example` rewrites it,
 * `npm run env:example -- --check` fails when it is stale, `-- --print` writes it to stdout
 * (test/repo/env-example.test.ts compares that with the file). Every variable is listed
 * commented out, with its default and meaning; secrets (docs/operations.md "Production") are
 * marked, with their `<NAME>_FILE` form.
 */
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(import.meta.dirname, "..");
export const ENV_EXAMPLE = path.join(root, ".env.example");

export interface ConfigRow {
  names: string[];
  defaultText: string;
  meaning: string;
}

/** Splits a markdown table row on `|` outside backticks. */
const cells = (line: string): string[] => {
  const out: string[] = [];
  let cell = "";
  let code = false;
  for (const ch of line.trim().replace(/^\||\|$/g, "")) {
    if (ch === "`") code = !code;
    if (ch === "|" && !code) {
      out.push(cell.trim());
      cell = "";
    } else cell += ch;
  }
  out.push(cell.trim());
  return out;
};

/** The rows of the table under `## Configuration` in docs/operations.md. */
export const configurationTable = (markdown: string): ConfigRow[] => {
  const start = markdown.indexOf("\n## Configuration\n");
  if (start < 0) throw new Error('docs/operations.md has no "## Configuration" section');
  // Up to the next heading: the "Production" table below it lists requirements, not variables.
  const section = markdown.slice(start + 1).split(/\n###? /)[0] ?? "";
  const rows = section.split("\n").filter((line) => line.startsWith("| `"));
  return rows.map((line) => {
    const [name = "", defaultText = "", meaning = ""] = cells(line);
    const names = [...name.matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((m) => m[1] ?? "");
    return { names, defaultText, meaning };
  });
};

const plain = (text: string) => text.replaceAll("`", "");

export const renderEnvExample = (markdown: string, secrets: readonly string[]): string => {
  const lines = [
    '# Every setting of fleet, generated from docs/operations.md "Configuration" by',
    "# `npm run env:example`: edit the table there, not this file. All are optional in",
    "# development; with NODE_ENV=production start-up refuses to run without JWT_SECRET (or",
    "# JWT_JWKS_URL), STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET (unless STRIPE_EMULATOR=true),",
    "# WEBHOOK_ENCRYPTION_KEY, ACCESS_PASSWORD_KEY, the agent's key (TUNNEL_SSH_KEY, or",
    "# TUNNEL_SSH_PUBLIC_KEY for an API alone), METRICS_TOKEN (or METRICS_PORT) and, with",
    "# TUNNEL_MODE=wireguard, the hub's key (TUNNEL_WG_PRIVATE_KEY, or TUNNEL_WG_PUBLIC_KEY for",
    "# an API alone).",
    "# A secret may instead be read from a file: <NAME>_FILE=/run/secrets/<name>.",
    "",
  ];
  for (const row of configurationTable(markdown)) {
    lines.push(`# ${plain(row.meaning)}`);
    lines.push(`# default: ${plain(row.defaultText)}`);
    for (const name of row.names) {
      if (secrets.includes(name)) lines.push(`# secret: or ${name}_FILE=`);
      lines.push(`#${name}=`);
    }
    lines.push("");
  }
  return lines.join("\n");
};

const main = async () => {
  const { SECRET_VARIABLES } = await import("../packages/shared/src/env/production-env.ts");
  const markdown = readFileSync(path.join(root, "docs", "operations.md"), "utf8");
  const text = renderEnvExample(markdown, SECRET_VARIABLES);
  if (process.argv.includes("--print")) {
    process.stdout.write(text);
    return;
  }
  if (process.argv.includes("--check")) {
    if (readFileSync(ENV_EXAMPLE, "utf8") !== text) {
      process.stderr.write(".env.example is stale: run `npm run env:example`\n");
      process.exit(1);
    }
    return;
  }
  writeFileSync(ENV_EXAMPLE, text);
};

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
