import { routerOsString } from "./routeros-script.ts";

/**
 * Per-router placeholders of a change's script (docs/api.md "Changes"): `{{identity}}`, `{{name}}`,
 * `{{tunnel_ip}}` and `{{metadata.<key>}}`. Their values come from routers and tenants, so they are
 * hostile: each is written as a RouterOS string literal ({@link routerOsString}: quotes, `\`, `$`,
 * `?`, `;`, brackets, braces, control characters and newlines escaped), or, where the placeholder
 * stands inside a string of the template, as that literal's escaped body. A value can never end the
 * string it is in, start a command or substitute a variable.
 */

/** What a script's placeholders are filled from: one router's facts. */
export interface ChangeScriptVars {
  identity: string;
  name: string;
  tunnel_ip: string;
  metadata: Readonly<Record<string, unknown>>;
}

const PLACEHOLDER = /\{\{([^{}]*)\}\}/g;
const METADATA_KEY = /^metadata\.([A-Za-z0-9_-]{1,64})$/;
const SIMPLE = new Set(["identity", "name", "tunnel_ip"]);

/** The placeholders of `template` that are not one of the known ones (as written, trimmed). */
export const unknownChangePlaceholders = (template: string): string[] => {
  const unknown: string[] = [];
  for (const match of template.matchAll(PLACEHOLDER)) {
    const inner = (match[1] ?? "").trim();
    if (!SIMPLE.has(inner) && !METADATA_KEY.test(inner) && !unknown.includes(inner)) unknown.push(inner);
  }
  return unknown;
};

/** Thrown for a template naming a placeholder that is not known (refused with 422 at create time). */
export class ChangePlaceholderError extends Error {}

const valueText = (value: unknown): string => {
  if (value === undefined || value === null) return "";
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return JSON.stringify(value);
};

const placeholderValue = (placeholder: string, vars: ChangeScriptVars): string => {
  if (placeholder === "identity") return vars.identity;
  if (placeholder === "name") return vars.name;
  if (placeholder === "tunnel_ip") return vars.tunnel_ip;
  const key = METADATA_KEY.exec(placeholder)?.[1];
  if (key === undefined) throw new ChangePlaceholderError(`unknown placeholder {{${placeholder}}}`);
  return valueText(Object.hasOwn(vars.metadata, key) ? vars.metadata[key] : undefined);
};

/**
 * Whether each offset of `template` is inside a string literal, read as RouterOS does: `"` opens
 * and closes, `\` escapes the next character inside, and a line whose first word starts with `#`
 * is a comment (its quotes count for nothing).
 */
const stringOffsets = (template: string): Uint8Array => {
  const inside = new Uint8Array(template.length + 1);
  let inString = false;
  let lineStart = true;
  for (let i = 0; i < template.length; i++) {
    const c = template[i];
    if (inString) {
      inside[i] = 1;
      if (c === "\\") {
        inside[i + 1] = 1;
        i += 1;
      } else if (c === '"') inString = false;
      continue;
    }
    if (lineStart && c === "#") {
      while (i + 1 < template.length && template[i + 1] !== "\n") i += 1;
      continue;
    }
    if (c === '"') {
      inString = true;
      lineStart = false;
    } else if (c === "\n") lineStart = true;
    else if (c !== " " && c !== "\t") lineStart = false;
  }
  return inside;
};

/** The script for one router: every placeholder replaced by its value, quoted for RouterOS. */
export const renderChangeScript = (template: string, vars: ChangeScriptVars): string => {
  const unknown = unknownChangePlaceholders(template);
  if (unknown.length > 0) throw new ChangePlaceholderError(`unknown placeholder {{${unknown[0]}}}`);
  const inside = stringOffsets(template);
  return template.replace(PLACEHOLDER, (_match, inner: string, offset: number) => {
    const literal = routerOsString(placeholderValue(inner.trim(), vars));
    return inside[offset] === 1 ? literal.slice(1, -1) : literal;
  });
};
