/**
 * A small typed model of RouterOS 7 script text and its one renderer (docs/routeros.md "Adoption").
 * Scripts handed to routers are built from these nodes, never by pasting strings together: every
 * value is a typed node, every string value goes through {@link routerOsString}, and every name or
 * bare word is checked against the few shapes RouterOS reads as a single token.
 *
 * Syntax as MikroTik documents it (https://help.mikrotik.com/docs/display/ROS/Scripting): a command
 * line ends at `;` or a newline; `$` inside a string starts a variable substitution, `?` asks the
 * console for help, and the escapes are `\"`, `\\`, `\n`, `\r`, `\t`, `\$`, `\?`, `\_` (space),
 * `\a`, `\b`, `\f`, `\v` and `\XX` (one byte in hex, capital letters).
 */

/** A value or expression. `word` is a bare token (durations such as `30s`, `startup`, `json`). */
export type RosValue =
  | { kind: "str"; value: string }
  | { kind: "num"; value: number }
  | { kind: "bool"; value: boolean }
  | { kind: "word"; value: string }
  | { kind: "var"; name: string }
  | { kind: "key"; name: string; key: string }
  | { kind: "array" }
  | { kind: "sub"; command: RosCommand }
  | { kind: "cmp"; op: "=" | "!=" | "<" | ">"; left: RosValue; right: RosValue }
  /** Integer (or time) arithmetic: `($a + 1)`, `(($t) * 1000)`. */
  | { kind: "arith"; op: "+" | "/" | "*"; left: RosValue; right: RosValue }
  /** `($name->[...])`: an array element whose key is itself a value. */
  | { kind: "index"; name: string; index: RosValue };

/** `/menu path verb positional... name=value...`, or a global command (`:serialize ...`) when `global`. */
export interface RosCommand {
  kind: "command";
  /** Menu path words (`["system", "scheduler"]`); empty inside `[find ...]`. */
  path: readonly string[];
  verb: string;
  /** True for the `:`-prefixed global commands. */
  global?: boolean;
  /** True for a root-menu command written with its slash (`/ping`). */
  root?: boolean;
  positional: readonly RosValue[];
  args: ReadonlyArray<readonly [string, RosValue]>;
}

export type RosStatement =
  | RosCommand
  | { kind: "comment"; text: string }
  | { kind: "local"; name: string; value: RosValue }
  | { kind: "set"; name: string; key?: string; index?: RosValue; value: RosValue }
  | { kind: "foreach"; name: string; in: RosValue; body: readonly RosStatement[] }
  | { kind: "if"; condition: RosValue; then: readonly RosStatement[]; otherwise?: readonly RosStatement[] }
  | { kind: "do"; body: readonly RosStatement[]; onError: readonly RosStatement[] }
  | { kind: "error"; message: RosValue };

/** Thrown when a node holds something RouterOS would not read back as the same single token. */
export class RouterOsScriptError extends Error {}

const PATH_WORD = /^[a-z][a-z0-9-]*$/;
const ARG_NAME = /^[a-z][a-z0-9.-]*$/;
const VAR_NAME = /^[A-Za-z][A-Za-z0-9]*$/;
const BARE_WORD = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

const check = (pattern: RegExp, value: string, what: string): string => {
  if (!pattern.test(value)) throw new RouterOsScriptError(`${what} ${JSON.stringify(value)} is not a RouterOS token`);
  return value;
};

// Printable ASCII that stays literal. Beyond what RouterOS requires (`"`, `\`, `$`, `?`), brackets,
// braces, `;`, `#` and backquote are written as \XX too: a string then reads the same wherever it is pasted.
const LITERAL = /^[A-Za-z0-9 !%&'()*+,\-./:<=>@^_|~]$/;
const NAMED_ESCAPES: Record<string, string> = {
  '"': '\\"',
  "\\": "\\\\",
  $: "\\$",
  "?": "\\?",
  "\n": "\\n",
  "\r": "\\r",
  "\t": "\\t",
};
const encoder = new TextEncoder();
const hex = (byte: number) => `\\${byte.toString(16).toUpperCase().padStart(2, "0")}`;

/**
 * A RouterOS string literal holding exactly `value` (its UTF-8 bytes): quotes, backslash, `$`,
 * `?` and newlines escaped by name, control characters and every non-ASCII byte as `\XX`. Lone
 * UTF-16 surrogates cannot be encoded as UTF-8 and are refused.
 */
export const routerOsString = (value: string): string => {
  if (/[\uD800-\uDFFF]/u.test(value.replace(/[\uD800-\uDBFF][\uDC00-\uDFFF]/g, ""))) {
    throw new RouterOsScriptError("a string holds a lone UTF-16 surrogate");
  }
  let out = '"';
  for (const char of value) {
    const named = NAMED_ESCAPES[char];
    if (named) out += named;
    else if (LITERAL.test(char)) out += char;
    else for (const byte of encoder.encode(char)) out += hex(byte);
  }
  out += '"';
  const back = readRouterOsString(out, 0);
  // The renderer's own check: the literal must read back as the value and end where it ends.
  if (back.value !== value || back.end !== out.length) {
    throw new RouterOsScriptError("string literal does not read back as its value");
  }
  return out;
};

/** RouterOS string escapes with a one-letter name, escape letter -> character (the simulator's parser reads them too). */
export const SIMPLE_UNESCAPES: Readonly<Record<string, string>> = {
  '"': '"',
  "\\": "\\",
  $: "$",
  "?": "?",
  n: "\n",
  r: "\r",
  t: "\t",
  _: " ",
  a: "\x07",
  b: "\b",
  f: "\f",
  v: "\v",
};

/**
 * Reads the string literal starting at `start` (a `"`) the way RouterOS does: returns its value
 * (bytes decoded as UTF-8) and the index after the closing quote. An unescaped `$` is a variable
 * substitution, which a literal produced here never holds: it is refused rather than guessed at.
 */
export const readRouterOsString = (text: string, start: number): { value: string; end: number } => {
  if (text[start] !== '"') throw new RouterOsScriptError(`expected a string at ${start}`);
  const bytes: number[] = [];
  let i = start + 1;
  for (;;) {
    const c = text[i];
    if (c === undefined) throw new RouterOsScriptError("unterminated string");
    if (c === '"') break;
    if (c === "$") throw new RouterOsScriptError(`variable substitution in a string at ${i}`);
    if (c === "\\") {
      const pair = text.slice(i + 1, i + 3);
      if (/^[0-9A-F]{2}$/.test(pair)) {
        bytes.push(Number.parseInt(pair, 16));
        i += 3;
        continue;
      }
      const e = text[i + 1] ?? "";
      const simple = SIMPLE_UNESCAPES[e];
      if (simple === undefined) throw new RouterOsScriptError(`unknown escape \\${e} at ${i}`);
      bytes.push(simple.charCodeAt(0));
      i += 2;
      continue;
    }
    for (const byte of encoder.encode(c)) bytes.push(byte);
    i += 1;
  }
  return { value: new TextDecoder("utf-8", { fatal: true }).decode(new Uint8Array(bytes)), end: i + 1 };
};

// ---- builders ----

export const str = (value: string): RosValue => ({ kind: "str", value });
export const num = (value: number): RosValue => {
  if (!Number.isSafeInteger(value)) throw new RouterOsScriptError(`${value} is not an integer`);
  return { kind: "num", value };
};
export const bool = (value: boolean): RosValue => ({ kind: "bool", value });
export const word = (value: string): RosValue => ({ kind: "word", value: check(BARE_WORD, value, "word") });
export const variable = (name: string): RosValue => ({ kind: "var", name: check(VAR_NAME, name, "variable") });
export const key = (name: string, k: string): RosValue => ({
  kind: "key",
  name: check(VAR_NAME, name, "variable"),
  key: k,
});
export const emptyArray = (): RosValue => ({ kind: "array" });
export const sub = (command: RosCommand): RosValue => ({ kind: "sub", command });
export const notEqual = (left: RosValue, right: RosValue): RosValue => ({ kind: "cmp", op: "!=", left, right });
export const equal = (left: RosValue, right: RosValue): RosValue => ({ kind: "cmp", op: "=", left, right });
export const less = (left: RosValue, right: RosValue): RosValue => ({ kind: "cmp", op: "<", left, right });
export const greater = (left: RosValue, right: RosValue): RosValue => ({ kind: "cmp", op: ">", left, right });
export const plus = (left: RosValue, right: RosValue): RosValue => ({ kind: "arith", op: "+", left, right });
export const times = (left: RosValue, right: RosValue): RosValue => ({ kind: "arith", op: "*", left, right });
export const divided = (left: RosValue, right: RosValue): RosValue => ({ kind: "arith", op: "/", left, right });
export const element = (name: string, at: RosValue): RosValue => ({
  kind: "index",
  name: check(VAR_NAME, name, "variable"),
  index: at,
});

type Args = Record<string, RosValue>;

/** `/path... verb positional... name=value...` (argument order as given). */
export const command = (path: string, verb: string, args: Args = {}, positional: RosValue[] = []): RosCommand => ({
  kind: "command",
  path: path === "" ? [] : path.split(" ").map((w) => check(PATH_WORD, w, "menu")),
  verb: check(PATH_WORD, verb, "command"),
  positional,
  args: Object.entries(args).map(([name, value]) => [check(ARG_NAME, name, "argument"), value] as const),
});

/** A global command: `:serialize to=json value=$x`, `:tostr $x`. */
export const globalCommand = (verb: string, args: Args = {}, positional: RosValue[] = []): RosCommand => ({
  ...command("", verb, args, positional),
  global: true,
});

/** A root-menu command written with its slash: `/ping address=... count=5 as-value`. */
export const rootCommand = (verb: string, args: Args = {}, positional: RosValue[] = []): RosCommand => ({
  ...command("", verb, args, positional),
  root: true,
});

/** `[find where name="x" ...]`. */
export const findWhere = (conditions: Args): RosValue => sub(command("", "find", conditions, [word("where")]));

export const comment = (text: string): RosStatement => {
  if (/[\r\n]/.test(text)) throw new RouterOsScriptError("a comment cannot span lines");
  return { kind: "comment", text };
};
export const local = (name: string, value: RosValue): RosStatement => ({
  kind: "local",
  name: check(VAR_NAME, name, "variable"),
  value,
});
export const set = (name: string, value: RosValue, k?: string): RosStatement => ({
  kind: "set",
  name: check(VAR_NAME, name, "variable"),
  ...(k === undefined ? {} : { key: k }),
  value,
});
/** `:set ($name->[...]) value`: appends with `[:len $name]` as the key. */
export const setAt = (name: string, at: RosValue, value: RosValue): RosStatement => ({
  kind: "set",
  name: check(VAR_NAME, name, "variable"),
  index: at,
  value,
});
/** `:foreach name in=... do={...}`. */
export const forEach = (name: string, over: RosValue, body: RosStatement[]): RosStatement => ({
  kind: "foreach",
  name: check(VAR_NAME, name, "variable"),
  in: over,
  body,
});
export const ifThen = (condition: RosValue, then: RosStatement[], otherwise?: RosStatement[]): RosStatement => ({
  kind: "if",
  condition,
  then,
  ...(otherwise ? { otherwise } : {}),
});
export const tryDo = (body: RosStatement[], onError: RosStatement[] = []): RosStatement => ({
  kind: "do",
  body,
  onError,
});
export const fail = (message: string): RosStatement => ({ kind: "error", message: str(message) });

// ---- renderer ----

const renderValue = (value: RosValue, inArgument: boolean): string => {
  switch (value.kind) {
    case "str":
      return routerOsString(value.value);
    case "num":
      return String(value.value);
    case "bool":
      return inArgument ? (value.value ? "yes" : "no") : value.value ? "true" : "false";
    case "word":
      return check(BARE_WORD, value.value, "word");
    case "var":
      return `$${check(VAR_NAME, value.name, "variable")}`;
    case "key":
      return `($${check(VAR_NAME, value.name, "variable")}->${routerOsString(value.key)})`;
    case "array":
      return "({})";
    case "sub":
      return `[${renderCommand(value.command)}]`;
    case "cmp":
    case "arith":
      return `(${renderValue(value.left, false)} ${value.op} ${renderValue(value.right, false)})`;
    case "index":
      return `($${check(VAR_NAME, value.name, "variable")}->${renderValue(value.index, false)})`;
  }
};

const renderCommand = (c: RosCommand): string => {
  const head = c.global
    ? `:${c.verb}`
    : c.path.length > 0
      ? `/${c.path.join(" ")} ${c.verb}`
      : c.root
        ? `/${c.verb}`
        : c.verb;
  const parts = [head];
  for (const p of c.positional) parts.push(renderValue(p, true));
  for (const [name, value] of c.args) parts.push(`${check(ARG_NAME, name, "argument")}=${renderValue(value, true)}`);
  return parts.join(" ");
};

const renderBlock = (statements: readonly RosStatement[], indent: string): string =>
  statements.length === 0
    ? "{}"
    : `{\n${statements.map((s) => renderStatement(s, `${indent}  `)).join("\n")}\n${indent}}`;

const renderStatement = (s: RosStatement, indent: string): string => {
  switch (s.kind) {
    case "command":
      return indent + renderCommand(s);
    case "comment":
      if (/[\r\n]/.test(s.text)) throw new RouterOsScriptError("a comment cannot span lines");
      return `${indent}# ${s.text}`;
    case "local":
      return `${indent}:local ${check(VAR_NAME, s.name, "variable")} ${renderValue(s.value, false)}`;
    case "set": {
      const target =
        s.index !== undefined
          ? renderValue({ kind: "index", name: s.name, index: s.index }, false)
          : s.key === undefined
            ? s.name
            : `($${s.name}->${routerOsString(s.key)})`;
      return `${indent}:set ${target} ${renderValue(s.value, false)}`;
    }
    case "if": {
      const condition =
        s.condition.kind === "cmp" ? renderValue(s.condition, false) : `(${renderValue(s.condition, false)})`;
      const otherwise = s.otherwise ? ` else=${renderBlock(s.otherwise, indent)}` : "";
      return `${indent}:if ${condition} do=${renderBlock(s.then, indent)}${otherwise}`;
    }
    case "foreach":
      return `${indent}:foreach ${check(VAR_NAME, s.name, "variable")} in=${renderValue(s.in, true)} do=${renderBlock(s.body, indent)}`;
    case "do":
      return `${indent}:do ${renderBlock(s.body, indent)} on-error=${renderBlock(s.onError, indent)}`;
    case "error":
      return `${indent}:error ${renderValue(s.message, false)}`;
  }
};

/** The script text: one statement per line (blocks span lines), ending in a newline. */
export const renderRouterOsScript = (statements: readonly RosStatement[]): string =>
  `${statements.map((s) => renderStatement(s, "")).join("\n")}\n`;

/** A duration as RouterOS writes it in arguments: whole seconds as `30s`, else milliseconds. */
export const routerOsDuration = (ms: number): RosValue => {
  if (!Number.isSafeInteger(ms) || ms <= 0) throw new RouterOsScriptError(`${ms} ms is not a positive duration`);
  return word(ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`);
};
