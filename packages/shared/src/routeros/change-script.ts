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

/** What an offset of a template is, read as RouterOS reads it. */
const COMMAND = 0;
const STRING = 1;
/** Inside a string, right after its `\`: the template escapes whatever comes here. */
const ESCAPED = 2;

const CLOSING: Record<string, string> = { "[": "]", "(": ")", "{": "}" };

/**
 * The context of each offset of `template`, read as RouterOS does: `"` opens and closes a string,
 * `\` escapes the next character inside, `$[` and `$(` inside a string open a command (or an
 * expression) again until their bracket closes, brackets, parentheses and braces nest, and a line
 * whose first word starts with `#` is a comment (its quotes count for nothing).
 */
const contexts = (template: string): Uint8Array => {
  const kinds = new Uint8Array(template.length + 1);
  // Each entry: null for a string, else the character that closes the command context.
  const stack: Array<string | null> = [""];
  let lineStart = true;
  for (let i = 0; i < template.length; i++) {
    const c = template[i] ?? "";
    const top = stack.at(-1);
    if (top === null) {
      kinds[i] = STRING;
      if (c === "\\") {
        kinds[i + 1] = ESCAPED;
        i += 1;
      } else if (c === '"') stack.pop();
      else if (c === "$" && (template[i + 1] === "[" || template[i + 1] === "(")) {
        kinds[i + 1] = STRING;
        stack.push(CLOSING[template[i + 1] ?? ""] ?? "");
        i += 1;
        lineStart = false;
      }
      continue;
    }
    kinds[i] = COMMAND;
    if (lineStart && c === "#") {
      while (i + 1 < template.length && template[i + 1] !== "\n") i += 1;
      continue;
    }
    if (c === '"') stack.push(null);
    else if (c in CLOSING) stack.push(CLOSING[c] ?? "");
    else if (c === top && stack.length > 1) stack.pop();
    if (c === "\n") lineStart = true;
    else if (c !== " " && c !== "\t" && !(c in CLOSING)) lineStart = false;
  }
  return kinds;
};

/** A rendered script longer than this (UTF-8 bytes) is refused: values multiply with placeholders. */
export const CHANGE_RENDERED_SCRIPT_BYTES = 256 * 1024;

/**
 * Where a known placeholder stands somewhere its value could not be a string of its own: right after
 * a `\` inside a string (the template would escape the literal's first character, and the value
 * would end the string) or right after `$` or `$name` (the value would name the variable to read).
 */
export const misplacedChangePlaceholders = (template: string): string[] => {
  const kinds = contexts(template);
  const misplaced: string[] = [];
  for (const match of template.matchAll(PLACEHOLDER)) {
    const offset = match.index ?? 0;
    const variable = /\$[A-Za-z0-9_]*$/.exec(template.slice(Math.max(0, offset - 256), offset));
    const dollar = variable ? offset - variable[0].length : -1;
    const afterDollar = dollar >= 0 && kinds[dollar] !== ESCAPED;
    if (kinds[offset] === ESCAPED || afterDollar) misplaced.push(match[0]);
  }
  return misplaced;
};

/** Why a template cannot be a change's script (refused with 422 at create time); empty when it can. */
export const changeTemplateProblems = (template: string): string[] => {
  const problems: string[] = [];
  const unknown = unknownChangePlaceholders(template);
  if (unknown.length > 0) {
    problems.push(
      `holds unknown placeholders: ${unknown.map((p) => `{{${p}}}`).join(", ")}; known are {{identity}}, {{name}}, {{tunnel_ip}} and {{metadata.<key>}}`,
    );
  }
  const misplaced = misplacedChangePlaceholders(template);
  if (misplaced.length > 0) {
    problems.push(
      `has placeholders right after \\ in a string or after a $ variable name: ${[...new Set(misplaced)].join(", ")}`,
    );
  }
  return problems;
};

const encoder = new TextEncoder();

/** The script for one router: every placeholder replaced by its value, quoted for RouterOS. */
export const renderChangeScript = (template: string, vars: ChangeScriptVars): string => {
  const problems = changeTemplateProblems(template);
  if (problems.length > 0) throw new ChangePlaceholderError(`the script ${problems[0]}`);
  const kinds = contexts(template);
  const rendered = template.replace(PLACEHOLDER, (_match, inner: string, offset: number) => {
    let literal: string;
    try {
      literal = routerOsString(placeholderValue(inner.trim(), vars));
    } catch (error) {
      if (error instanceof ChangePlaceholderError) throw error;
      throw new ChangePlaceholderError(`{{${inner.trim()}}} holds a value RouterOS cannot: ${String(error)}`);
    }
    return kinds[offset] === STRING ? literal.slice(1, -1) : literal;
  });
  if (encoder.encode(rendered).length > CHANGE_RENDERED_SCRIPT_BYTES) {
    throw new ChangePlaceholderError(`the rendered script is over ${CHANGE_RENDERED_SCRIPT_BYTES} bytes`);
  }
  return rendered;
};
