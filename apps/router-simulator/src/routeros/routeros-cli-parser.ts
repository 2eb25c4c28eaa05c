// A deliberately small subset of the RouterOS CLI grammar: enough for the fleet's four command forms,
// strict enough that anything scripting-like (`$var`, `;` chaining, `{}` blocks, arbitrary `[...]`)
// is a syntax error instead of being executed, so the simulator doubles as an injection canary.

export type Condition = { key: string; op: "=" | "~"; value: string };

export type ParsedCommand =
  | { kind: "nat-add"; args: Array<[string, string]> }
  | { kind: "nat-remove"; target: Target }
  /** `json`: `:put [:serialize to=json [/ip firewall nat print as-value ...]]` (RouterOS 7.13+). */
  | { kind: "nat-print"; terse: boolean; json: boolean; where: Condition[] }
  | { kind: "connection-remove"; target: Target }
  /** Offboarding (docs/routeros.md "Offboarding"): `/<menu> remove [find where ...]` of what adoption installed. */
  | { kind: "config-remove"; menu: ConfigMenu; target: Target };

/** Menus whose `remove` offboarding sends, beside NAT (docs/routeros.md "Offboarding"). */
export const CONFIG_MENUS = [
  "system scheduler",
  "system script",
  "user ssh-keys",
  "user",
  "user group",
  "ip firewall filter",
  "ip route",
  "ip address",
  "interface wireguard peers",
  "interface wireguard",
] as const;
export type ConfigMenu = (typeof CONFIG_MENUS)[number];
const isConfigMenu = (menu: string): menu is ConfigMenu => (CONFIG_MENUS as readonly string[]).includes(menu);

/** `[find ...]` or explicit `.id`s like `*1,*2`. */
export type Target = { find: Condition[] } | { ids: string[] };

export type ParseResult = { ok: true; command: ParsedCommand } | { ok: false; error: string };

type Token =
  | { type: "word"; col: number; key: string | undefined; op: "=" | "~" | undefined; value: string }
  | { type: "sub"; col: number; tokens: Token[] };

class CliError extends Error {}

const syntaxError = (col: number): CliError => new CliError(`syntax error (line 1 column ${col})`);
const endExpected = (col: number): CliError => new CliError(`expected end of command (line 1 column ${col})`);

const ESCAPES: Record<string, string> = { n: "\n", r: "\r", t: "\t", a: "\x07", b: "\b", f: "\f", v: "\v", _: " " };
const NAME = /^[a-z][a-z0-9.-]*$/;

/** Columns are 1-based like RouterOS; `depth > 0` means we are inside `[...]`. */
function tokenize(line: string, start: number, depth: number): { tokens: Token[]; end: number } {
  const tokens: Token[] = [];
  let i = start;
  while (i < line.length) {
    const c = line[i] ?? "";
    if (c === " " || c === "\t") {
      i++;
      continue;
    }
    if (c === "]") {
      if (depth === 0) throw syntaxError(i + 1);
      return { tokens, end: i + 1 };
    }
    if (c === "[") {
      const inner = tokenize(line, i + 1, depth + 1);
      tokens.push({ type: "sub", col: i + 1, tokens: inner.tokens });
      i = inner.end;
      continue;
    }
    const col = i + 1;
    let key: string | undefined;
    let op: "=" | "~" | undefined;
    let value = "";
    while (i < line.length) {
      const ch = line[i] ?? "";
      if (ch === " " || ch === "\t" || ch === "[" || ch === "]") break;
      if (ch === '"') {
        i++;
        for (;;) {
          const q = line[i];
          if (q === undefined) throw syntaxError(i + 1);
          if (q === '"') break;
          if (q === "$" || q === "\n" || q === "\r") throw syntaxError(i + 1);
          if (q === "\\") {
            const e = line[i + 1];
            if (e === undefined) throw syntaxError(i + 2);
            const hex = line.slice(i + 1, i + 3);
            if (/^[0-9A-F]{2}$/.test(hex)) {
              value += String.fromCharCode(Number.parseInt(hex, 16));
              i += 3;
              continue;
            }
            value += ESCAPES[e] ?? e;
            i += 2;
            continue;
          }
          value += q;
          i++;
        }
        i++;
        continue;
      }
      if (/[$;{}()\\\n\r"'`]/.test(ch)) throw syntaxError(i + 1);
      if ((ch === "=" || ch === "~") && op === undefined && NAME.test(value)) {
        key = value;
        op = ch;
        value = "";
        i++;
        continue;
      }
      value += ch;
      i++;
    }
    tokens.push({ type: "word", col, key, op, value });
  }
  if (depth > 0) throw syntaxError(line.length + 1);
  return { tokens, end: i };
}

const isBare = (t: Token | undefined, text?: string): t is Extract<Token, { type: "word" }> =>
  t?.type === "word" && t.op === undefined && (text === undefined || t.value === text);

function parseConditions(tokens: Token[]): Condition[] {
  const conds: Condition[] = [];
  for (const t of tokens) {
    if (t.type !== "word" || t.key === undefined || t.op === undefined) {
      if (isBare(t, "and")) continue;
      throw syntaxError(t.col);
    }
    conds.push({ key: t.key, op: t.op, value: t.value });
  }
  return conds;
}

function parseTarget(tokens: Token[]): Target {
  const [first, ...rest] = tokens;
  if (first === undefined) throw new CliError("missing value(s) of argument(s) numbers");
  if (rest[0]) throw endExpected(rest[0].col);
  if (first.type === "word") {
    if (first.op !== undefined || !/^\*[0-9A-F]+(?:,\*[0-9A-F]+)*$/.test(first.value)) {
      throw new CliError("no such item");
    }
    return { ids: first.value.split(",") };
  }
  const [cmd, ...args] = first.tokens;
  if (cmd?.type !== "word" || cmd.op !== undefined) throw syntaxError(cmd?.col ?? first.col);
  if (cmd.value !== "find") throw new CliError(`bad command name ${cmd.value} (line 1 column ${cmd.col})`);
  const conds = isBare(args[0], "where") ? args.slice(1) : args;
  return { find: parseConditions(conds) };
}

const MENUS: Record<string, readonly string[]> = {
  "ip firewall nat": ["add", "remove", "print"],
  "ip firewall connection": ["remove"],
  ...Object.fromEntries(CONFIG_MENUS.map((menu) => [menu, ["remove"]])),
};

// RouterOS rejects unknown argument names at parse time.
const NAT_ADD_ARGS = new Set([
  "chain",
  "action",
  "protocol",
  "src-address",
  "dst-address",
  "src-port",
  "dst-port",
  "in-interface",
  "out-interface",
  "in-interface-list",
  "to-addresses",
  "to-ports",
  "comment",
  "disabled",
  "log",
  "log-prefix",
]);

/**
 * Reads `/ip firewall nat add` or `/ip/firewall/nat/add` word by word through the menu tree, so an
 * error names the first unknown word like RouterOS does. Returns the menu, command and the rest.
 */
function readCommand(tokens: Token[], eol: number): { menu: string; command: string; rest: Token[] } {
  const path: string[] = [];
  for (const [n, t] of tokens.entries()) {
    if (!isBare(t)) throw n === 0 ? syntaxError(t.col) : endExpected(t.col);
    let col = t.col;
    const parts = t.value.split("/");
    for (const [k, name] of parts.entries()) {
      const wordCol = col;
      col += name.length + 1;
      if (name === "") continue;
      const menu = path.join(" ");
      if (MENUS[menu]?.includes(name)) {
        if (k < parts.length - 1) throw endExpected(col);
        return { menu, command: name, rest: tokens.slice(n + 1) };
      }
      const prefix = [...path, name].join(" ");
      if (!Object.keys(MENUS).some((m) => m === prefix || m.startsWith(`${prefix} `))) {
        throw new CliError(`bad command name ${name} (line 1 column ${wordCol})`);
      }
      path.push(name);
    }
  }
  throw new CliError(`expected command name (line 1 column ${eol})`);
}

/**
 * The one scripting form the agent uses: `:put [:serialize to=json [/ip firewall nat print
 * as-value where ...]]`. Anything else that starts with `:` stays unknown.
 */
function parseSerializedPrint(tokens: Token[], eol: number): ParsedCommand {
  const [put, sub, extra] = tokens;
  if (put?.type !== "word" || sub?.type !== "sub") throw syntaxError(put?.col ?? 1);
  if (extra) throw endExpected(extra.col);
  const [serialize, to, inner, more] = sub.tokens;
  if (!isBare(serialize, ":serialize")) throw new CliError(`bad command name (line 1 column ${serialize?.col ?? eol})`);
  if (to?.type !== "word" || to.key !== "to" || to.op !== "=" || to.value !== "json") {
    throw new CliError(`expected to=json (line 1 column ${to?.col ?? eol})`);
  }
  if (inner?.type !== "sub") throw syntaxError(inner?.col ?? eol);
  if (more) throw endExpected(more.col);
  const { menu, command, rest } = readCommand(inner.tokens, eol);
  if (menu !== "ip firewall nat" || command !== "print") throw syntaxError(inner.col);
  const [asValue, where, ...conds] = rest;
  if (!isBare(asValue, "as-value")) throw new CliError(`expected as-value (line 1 column ${asValue?.col ?? eol})`);
  if (where === undefined) return { kind: "nat-print", terse: false, json: true, where: [] };
  if (!isBare(where, "where")) throw endExpected(where.col);
  return { kind: "nat-print", terse: false, json: true, where: parseConditions(conds) };
}

export function parseRouterOsCommand(line: string): ParseResult {
  try {
    const { tokens } = tokenize(line, 0, 0);
    if (isBare(tokens[0], ":put")) return { ok: true, command: parseSerializedPrint(tokens, line.length + 1) };
    const { menu, command, rest } = readCommand(tokens, line.length + 1);

    if (menu === "ip firewall nat" && command === "add") {
      const args: Array<[string, string]> = [];
      for (const t of rest) {
        if (t.type !== "word" || t.op !== "=" || t.key === undefined || !NAT_ADD_ARGS.has(t.key)) {
          throw endExpected(t.col);
        }
        args.push([t.key, t.value]);
      }
      return { ok: true, command: { kind: "nat-add", args } };
    }
    if (command === "remove" && isConfigMenu(menu)) {
      return { ok: true, command: { kind: "config-remove", menu, target: parseTarget(rest) } };
    }
    if (command === "remove") {
      const target = parseTarget(rest);
      return { ok: true, command: { kind: menu === "ip firewall nat" ? "nat-remove" : "connection-remove", target } };
    }
    // print [terse] [where cond...]
    let terse = false;
    let i = 0;
    for (; i < rest.length; i++) {
      const t = rest[i];
      if (isBare(t, "terse")) terse = true;
      else if (isBare(t, "without-paging") || isBare(t, "detail")) continue;
      else break;
    }
    const tail = rest.slice(i);
    if (tail.length === 0) return { ok: true, command: { kind: "nat-print", terse, json: false, where: [] } };
    const [head, ...conds] = tail;
    if (!isBare(head, "where")) throw endExpected(head?.col ?? line.length + 1);
    return { ok: true, command: { kind: "nat-print", terse, json: false, where: parseConditions(conds) } };
  } catch (err) {
    if (err instanceof CliError) return { ok: false, error: err.message };
    throw err;
  }
}
