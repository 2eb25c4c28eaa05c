import { SIMPLE_UNESCAPES } from "@fleet/shared";
/**
 * A parser for the part of the RouterOS 7 scripting language that adoption scripts and the one-line
 * adoption command use (docs/routeros.md "Simulator"), written from MikroTik's description
 * (https://help.mikrotik.com/docs/display/ROS/Scripting): command lines end at `;` or a newline,
 * `[...]` substitutes a command's value, `(...)` groups an expression, `{...}` is a block, strings
 * take the documented escapes and substitute `$name`. Whatever else RouterOS accepts is refused
 * here with an error naming the line and column, so the simulator never quietly skips a command.
 */

export type Expr =
  | { kind: "str"; parts: Array<string | { var: string }> }
  | { kind: "word"; value: string }
  | { kind: "var"; name: string }
  | { kind: "sub"; statement: Statement }
  | { kind: "block"; body: Statement[] }
  | { kind: "binary"; op: BinaryOp; left: Expr; right: Expr }
  | { kind: "not"; value: Expr }
  | { kind: "array" };

/** Operators inside `( ... )`: comparisons, `->`, and the integer/time arithmetic health reading needs. */
export type BinaryOp = "=" | "!=" | "->" | "<" | ">" | "+" | "*" | "/";
const OPERATORS: readonly BinaryOp[] = ["->", "!=", "=", "<", ">", "+", "*", "/"];

export interface Arg {
  name: string | undefined;
  value: Expr | undefined;
}

export type Statement =
  | { kind: "menu"; path: string[]; verb: string; args: Arg[]; line: number }
  | { kind: "global"; verb: string; args: Arg[]; line: number };

export class RouterOsSyntaxError extends Error {}

/** Menus the simulator knows and the commands each takes; anything else is a "bad command name". */
export const MENUS: Record<string, readonly string[]> = {
  "": ["import", "ping"],
  system: ["reboot"],
  "system note": ["get", "set"],
  "system ntp": [],
  "system ntp client": ["get", "set"],
  "system backup": ["save", "load"],
  "system package": [],
  "system package update": ["get", "set", "check-for-updates", "download", "install"],
  "ip dns": ["get", "set"],
  "system device-mode": ["get", "print"],
  "system identity": ["get", "set"],
  "system resource": ["get"],
  "system health": ["get", "find", "print"],
  "system routerboard": ["get"],
  "system license": ["get"],
  "system script": ["add", "remove", "run", "print"],
  "system scheduler": ["add", "remove", "find", "print"],
  user: ["add", "remove", "print"],
  "user group": ["add", "remove", "print"],
  "user ssh-keys": ["add", "remove", "print"],
  tool: ["fetch"],
  file: ["remove", "print"],
  interface: ["get", "find", "print"],
  "interface wireguard": ["add", "remove", "find", "get", "print"],
  "interface wireguard peers": ["add", "remove", "find", "print"],
  ip: [],
  "ip address": ["add", "remove", "find", "print"],
  "ip route": ["add", "remove", "find", "print"],
  "ip firewall": [],
  "ip firewall filter": ["add", "remove", "find", "move", "print"],
};

const GLOBALS = new Set([
  "local",
  "global",
  "set",
  "if",
  "do",
  "error",
  "log",
  "put",
  "serialize",
  "tostr",
  "len",
  "delay",
  "foreach",
  "toarray",
  "tonum",
  "typeof",
]);

class Reader {
  i = 0;
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }

  peek(): string | undefined {
    return this.text[this.i];
  }

  where(at = this.i): string {
    const before = this.text.slice(0, at);
    const line = before.split("\n").length;
    const column = at - before.lastIndexOf("\n");
    return `line ${line} column ${column}`;
  }

  line(at = this.i): number {
    return this.text.slice(0, at).split("\n").length;
  }

  fail(message: string, at = this.i): never {
    throw new RouterOsSyntaxError(`${message} (${this.where(at)})`);
  }

  /** Spaces and tabs only: a newline ends a command line. */
  skipBlanks(): void {
    while (this.peek() === " " || this.peek() === "\t" || (this.peek() === "\\" && this.text[this.i + 1] === "\n")) {
      this.i += this.peek() === "\\" ? 2 : 1;
    }
  }
}

const WORD_CHAR = /[A-Za-z0-9._:,/@+*%-]/;

const readWord = (r: Reader): string => {
  const start = r.i;
  while (WORD_CHAR.test(r.peek() ?? "")) r.i += 1;
  if (r.i === start) r.fail(`syntax error near ${JSON.stringify(r.peek() ?? "end of script")}`);
  return r.text.slice(start, r.i);
};

const SIMPLE = SIMPLE_UNESCAPES;

/** A string literal: escapes become bytes (decoded as UTF-8 at the end), `$name` a substitution. */
const readString = (r: Reader): Expr => {
  const parts: Array<string | { var: string }> = [];
  let bytes: number[] = [];
  const flush = () => {
    if (bytes.length > 0) parts.push(Buffer.from(bytes).toString("utf8"));
    bytes = [];
  };
  r.i += 1;
  for (;;) {
    const c = r.peek();
    if (c === undefined) return r.fail("unterminated string");
    if (c === '"') break;
    if (c === "$") {
      r.i += 1;
      if (r.peek() === "(" || r.peek() === "[") r.fail("expression substitution in a string is not simulated");
      const start = r.i;
      while (/[A-Za-z0-9]/.test(r.peek() ?? "")) r.i += 1;
      if (r.i === start) r.fail("bad variable name in a string");
      flush();
      parts.push({ var: r.text.slice(start, r.i) });
      continue;
    }
    if (c === "\\") {
      const pair = r.text.slice(r.i + 1, r.i + 3);
      if (/^[0-9A-F]{2}$/.test(pair)) {
        bytes.push(Number.parseInt(pair, 16));
        r.i += 3;
        continue;
      }
      const next = r.text[r.i + 1] ?? "";
      if (next === "\n") {
        r.i += 2; // a line continued inside a string
        continue;
      }
      const simple = SIMPLE[next];
      if (simple === undefined) r.fail(`unknown escape \\${next}`);
      bytes.push(simple.charCodeAt(0));
      r.i += 2;
      continue;
    }
    if (c === "?") r.fail("an unescaped ? in a string asks the console for help");
    for (const byte of Buffer.from(c, "utf8")) bytes.push(byte);
    r.i += 1;
  }
  r.i += 1;
  flush();
  return { kind: "str", parts };
};

const readVariable = (r: Reader): Expr => {
  r.i += 1;
  const start = r.i;
  while (/[A-Za-z0-9]/.test(r.peek() ?? "")) r.i += 1;
  if (r.i === start) r.fail("bad variable name");
  return { kind: "var", name: r.text.slice(start, r.i) };
};

/** `( ... )`: an operand, optionally an operator of OPERATORS and another operand; `({})` is an empty array. */
const readParen = (r: Reader): Expr => {
  r.i += 1;
  r.skipBlanks();
  if (r.peek() === "{" && r.text[r.i + 1] === "}") {
    r.i += 2;
    r.skipBlanks();
    if (r.peek() !== ")") r.fail("expected )");
    r.i += 1;
    return { kind: "array" };
  }
  let left: Expr;
  if (r.peek() === "!") {
    r.i += 1;
    left = { kind: "not", value: readOperand(r) };
  } else left = readOperand(r);
  r.skipBlanks();
  const op = OPERATORS.find((o) => r.text.startsWith(o, r.i));
  if (op) {
    r.i += op.length;
    r.skipBlanks();
    const right = readOperand(r);
    left = { kind: "binary", op, left, right };
    r.skipBlanks();
  }
  if (r.peek() !== ")") r.fail(`expected ) or an operator this simulator knows (${OPERATORS.join(", ")})`, r.i);
  r.i += 1;
  return left;
};

const readOperand = (r: Reader): Expr => {
  switch (r.peek()) {
    case '"':
      return readString(r);
    case "$":
      return readVariable(r);
    case "(":
      return readParen(r);
    case "[":
      return readSub(r);
    case "{":
      return { kind: "block", body: readBlock(r) };
    default:
      return { kind: "word", value: readWord(r) };
  }
};

const readSub = (r: Reader): Expr => {
  r.i += 1;
  r.skipBlanks();
  const statement = readStatement(r);
  r.skipBlanks();
  if (r.peek() !== "]") r.fail("expected ]");
  r.i += 1;
  if (!statement) r.fail("empty command substitution");
  return { kind: "sub", statement };
};

/** `{ statements }` */
const readBlock = (r: Reader): Statement[] => {
  if (r.peek() !== "{") r.fail("expected {");
  r.i += 1;
  const body = readStatements(r, "}");
  if (r.peek() !== "}") r.fail("expected }");
  r.i += 1;
  return body;
};

const endOfCommand = (c: string | undefined) =>
  c === undefined || c === "\n" || c === "\r" || c === ";" || c === "]" || c === "}";

const readArgs = (r: Reader): Arg[] => {
  const args: Arg[] = [];
  for (;;) {
    r.skipBlanks();
    if (endOfCommand(r.peek())) return args;
    if (r.peek() === "#") r.fail("a comment must start its own line");
    const start = r.i;
    if (/[a-z]/.test(r.peek() ?? "")) {
      const name = readWord(r);
      if (r.peek() === "=") {
        r.i += 1;
        if (endOfCommand(r.peek()) || r.peek() === " " || r.peek() === "\t")
          args.push({ name, value: { kind: "word", value: "" } });
        else args.push({ name, value: readOperand(r) });
        continue;
      }
      // A bare word: a flag (`as-value`) or an unnamed value (`where`, a script name).
      args.push({ name: undefined, value: { kind: "word", value: name } });
      if (r.i === start) r.fail("syntax error");
      continue;
    }
    args.push({ name: undefined, value: readOperand(r) });
  }
};

const readStatement = (r: Reader): Statement | undefined => {
  r.skipBlanks();
  const at = r.i;
  const line = r.line(at);
  if (r.peek() === ":") {
    r.i += 1;
    const verb = readWord(r);
    if (!GLOBALS.has(verb)) r.fail(`bad command name ${verb}`, at);
    return { kind: "global", verb, args: readArgs(r), line };
  }
  if (endOfCommand(r.peek())) return undefined;
  // A menu command: `/a b c verb`, `/a/b/c/verb` or, inside `[...]`, a bare `find`.
  const absolute = r.peek() === "/";
  if (absolute) r.i += 1;
  const path: string[] = [];
  for (;;) {
    r.skipBlanks();
    const wordAt = r.i;
    const raw = readWord(r);
    const words = raw.split("/").filter((w) => w !== "");
    for (const [k, w] of words.entries()) {
      const menu = path.join(" ");
      if (!absolute && path.length === 0 && (w === "find" || w === "get")) {
        return { kind: "menu", path: [], verb: w, args: readArgs(r), line };
      }
      if (MENUS[menu]?.includes(w) && k === words.length - 1) {
        return { kind: "menu", path, verb: w, args: readArgs(r), line };
      }
      const next = [...path, w].join(" ");
      if (MENUS[next] === undefined) r.fail(`bad command name ${w}`, wordAt);
      path.push(w);
    }
    r.skipBlanks();
    if (endOfCommand(r.peek())) r.fail("expected command name");
  }
};

/** Statements until `end` (`}` of a block) or the end of the script. */
const readStatements = (r: Reader, end: "}" | undefined): Statement[] => {
  const out: Statement[] = [];
  for (;;) {
    r.skipBlanks();
    const c = r.peek();
    if (c === undefined) {
      if (end) r.fail("missing }");
      return out;
    }
    if (c === end) return out;
    if (c === "\n" || c === "\r" || c === ";") {
      r.i += 1;
      continue;
    }
    if (c === "#") {
      while (r.peek() !== undefined && r.peek() !== "\n") r.i += 1;
      continue;
    }
    if (c === "}" || c === "]") r.fail(`unexpected ${c}`);
    const statement = readStatement(r);
    if (statement) out.push(statement);
    r.skipBlanks();
    if (!endOfCommand(r.peek())) r.fail("expected end of command");
  }
};

/** The whole script, or a RouterOsSyntaxError naming where it stopped making sense. */
export const parseRouterOsScript = (text: string): Statement[] => readStatements(new Reader(text), undefined);

/** The value of a single string literal (tests feed the generator's strings through here). */
export const parseRouterOsStringLiteral = (text: string): Expr => {
  const r = new Reader(text);
  const value = readString(r);
  if (r.i !== text.length) r.fail("text after the string");
  return value;
};
