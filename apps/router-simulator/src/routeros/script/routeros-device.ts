import { type Clock, generateWireguardKeyPair, isWireguardKey, systemClock } from "@fleet/shared";
import ssh2 from "ssh2";
import { NOT_SYSTEM, RouterOsSystem, type RouterOsSystemOptions } from "./routeros-device-system.ts";
import {
  type FindConditions,
  findInterfaces,
  findSensors,
  getInterface,
  getSensor,
  HealthCommandError,
  type HealthValue,
  ping,
} from "../health/health-commands.ts";
import { healthSeed, SimulatedHealth } from "../health/simulated-health.ts";
import { type Arg, type Expr, parseRouterOsScript, type Statement } from "./routeros-script-parser.ts";

/**
 * One simulated RouterOS 7 device as scripts see it (docs/routeros.md "Simulator"): identity and
 * hardware, device-mode, users, groups, SSH keys, stored scripts, scheduler entries (real timers),
 * files and a log. `run()` executes script text the way the router's terminal or `/import` would;
 * a command this simulator does not know fails loudly, like a typo on a real router.
 */

/** A RouterOS time value (uptime, intervals): kept in seconds, printed like RouterOS prints it. */
export class RosTime {
  readonly seconds: number;
  constructor(seconds: number) {
    this.seconds = seconds;
  }
  toString(): string {
    let s = Math.floor(this.seconds);
    const weeks = Math.floor(s / 604_800);
    s -= weeks * 604_800;
    const days = Math.floor(s / 86_400);
    s -= days * 86_400;
    const pad = (n: number) => String(n).padStart(2, "0");
    const clock = `${pad(Math.floor(s / 3600))}:${pad(Math.floor((s % 3600) / 60))}:${pad(s % 60)}`;
    return `${weeks ? `${weeks}w` : ""}${days ? `${days}d` : ""}${clock}`;
  }
}

export type RosVal = string | number | boolean | RosTime | Map<string, RosVal> | { ids: string[] } | undefined;

/** A command failed at run time (RouterOS prints it and stops the script unless `:do on-error` catches it). */
export class RouterOsRuntimeError extends Error {}

export interface HttpRequest {
  method: string;
  url: string;
  headers: Array<[string, string]>;
  body: string | undefined;
}
export interface HttpResponse {
  status: number;
  body: string;
}

export interface RouterOsDeviceOptions {
  identity: string;
  /** `/system resource get version`, e.g. `7.16.2 (stable)`. */
  version: string;
  boardName: string;
  /** `/system routerboard get model` (RouterBOARDs only). */
  model: string;
  /** False for a CHR: no RouterBOARD, no serial number, a license system-id instead of a software-id. */
  routerboard: boolean;
  serialNumber: string;
  /** software-id (RouterBOARD) or system-id (CHR). */
  licenseId: string;
  /** Milliseconds since the epoch at boot; uptime counts from here. */
  bootedAt: number;
  /** `/system device-mode`: false forbids the feature, as home mode does. */
  deviceMode?: { fetch: boolean; scheduler: boolean };
  /** What `/tool fetch` sends requests through. */
  http: (request: HttpRequest) => Promise<HttpResponse>;
  /** The device's time (uptime); default: the system clock. */
  clock?: Clock;
  /**
   * Called after a command changed a table of the management tunnel (`interface wireguard`, its
   * peers, `ip address`, `ip route`, `ip firewall filter`): `--netns` applies them to a real
   * wireguard-go interface (docs/routeros.md "Simulator"). A failure fails the command.
   */
  onTunnelChange?: (device: RouterOsDevice) => Promise<void>;
  /** Reboots, update channels, `--break-tunnel-on-change` (routeros-device-system.ts). */
  system?: RouterOsSystemOptions;
  /** What `/system resource`, `/system health`, `/interface` and `/ping` report; default: from the serial number. */
  health?: SimulatedHealth;
}

interface Item {
  id: string;
  props: Record<string, string>;
}

/** What {@link RouterOsDevice.snapshot} saves and {@link RouterOsDevice.boot} restores. */
export interface DeviceSnapshot {
  nextId: number;
  tables: Record<string, Item[]>;
}

export type TableName =
  | "user group"
  | "user"
  | "user ssh-keys"
  | "system script"
  | "system scheduler"
  | "file"
  | "interface wireguard"
  | "interface wireguard peers"
  | "ip address"
  | "ip route"
  | "ip firewall filter";
const isTable = (menu: string): menu is TableName => menu in TABLE_ARGS;

const TABLE_ARGS: Record<TableName, readonly string[]> = {
  "user group": ["name", "policy", "comment", "skin"],
  user: ["name", "group", "address", "comment", "password", "disabled"],
  "user ssh-keys": ["user", "key", "comment"],
  "system script": ["name", "source", "policy", "comment", "owner", "dont-require-permissions"],
  "system scheduler": ["name", "start-time", "start-date", "interval", "on-event", "policy", "comment", "disabled"],
  file: ["name", "contents"],
  "interface wireguard": ["name", "listen-port", "mtu", "private-key", "comment", "disabled"],
  "interface wireguard peers": [
    "interface",
    "public-key",
    "endpoint-address",
    "endpoint-port",
    "allowed-address",
    "persistent-keepalive",
    "preshared-key",
    "comment",
    "disabled",
  ],
  "ip address": ["address", "interface", "network", "comment", "disabled"],
  "ip route": ["dst-address", "gateway", "distance", "comment", "disabled"],
  "ip firewall filter": [
    "chain",
    "action",
    "in-interface",
    "src-address",
    "dst-address",
    "protocol",
    "dst-port",
    "connection-state",
    "connection-nat-state",
    "comment",
    "disabled",
  ],
};

/** Tables whose items need a unique `name`. */
const NAMED_TABLES: ReadonlySet<TableName> = new Set([
  "user group",
  "user",
  "system script",
  "system scheduler",
  "file",
  "interface wireguard",
]);
/** The management tunnel's tables (docs/routeros.md "The management tunnel"): changes reach `onTunnelChange`. */
const TUNNEL_TABLES: ReadonlySet<TableName> = new Set([
  "interface wireguard",
  "interface wireguard peers",
  "ip address",
  "ip route",
  "ip firewall filter",
]);

/** User policies RouterOS 7 knows (https://help.mikrotik.com/docs/display/ROS/User). */
const POLICIES = new Set([
  "local",
  "telnet",
  "ssh",
  "ftp",
  "reboot",
  "read",
  "write",
  "policy",
  "test",
  "winbox",
  "password",
  "web",
  "sniff",
  "sensitive",
  "api",
  "romon",
  "rest-api",
]);

const DURATION = /^(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m(?!s))?(?:(\d+)s)?(?:(\d+)ms)?$/;

/** `30s`, `1m`, `250ms`, `1d2h` -> milliseconds; undefined when RouterOS would refuse it. */
export const parseRouterOsInterval = (text: string): number | undefined => {
  const m = DURATION.exec(text);
  if (!m || text === "") return undefined;
  const [w, d, h, min, s, ms] = m.slice(1).map((x) => Number(x ?? 0));
  return ((((w ?? 0) * 7 + (d ?? 0)) * 24 + (h ?? 0)) * 60 + (min ?? 0)) * 60_000 + (s ?? 0) * 1000 + (ms ?? 0);
};

/** IPv4 `a.b.c.d` inside `a.b.c.d/n`. */
const inCidr = (address: string, cidr: string): boolean => {
  const toInt = (ip: string) => ip.split(".").reduce((n, part) => n * 256 + Number(part), 0);
  const [net, bits] = cidr.split("/");
  if (!net || bits === undefined) return address === cidr;
  const size = 2 ** (32 - Number(bits));
  return Math.floor(toInt(address) / size) === Math.floor(toInt(net) / size);
};

const str = (value: RosVal): string => {
  if (value === undefined) return "";
  if (value instanceof Map) return [...value.values()].map(str).join(";");
  if (typeof value === "object" && "ids" in value) return value.ids.join(";");
  return String(value);
};

/**
 * `:serialize to=json` as RouterOS 7.13+ writes it: associative arrays become objects with their
 * keys in RouterOS's own (sorted) order, no spaces; strings that look like numbers become floats
 * with six decimals (`12.000000`, the conversion `options=json.no-string-conversion` of 7.17 turns
 * off); booleans stay booleans; time values are written as RouterOS prints them.
 */
export const serializeJson = (value: RosVal, noStringConversion = false): string => {
  if (value === undefined) return "null";
  if (typeof value === "boolean") return value ? "true" : "false";
  if (typeof value === "number") return value.toFixed(6);
  if (value instanceof RosTime) return JSON.stringify(value.toString());
  if (value instanceof Map && isList(value)) {
    // A list (keys 0..n-1, as `:set ($a->[:len $a]) $x` appends) is a JSON array.
    return `[${[...value.values()].map((v) => serializeJson(v, noStringConversion)).join(",")}]`;
  }
  if (value instanceof Map) {
    const keys = [...value.keys()].sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${serializeJson(value.get(k), noStringConversion)}`).join(",")}}`;
  }
  if (typeof value === "object") return JSON.stringify(value.ids);
  if (!noStringConversion && /^-?\d+(\.\d+)?$/.test(value)) return Number(value).toFixed(6);
  return JSON.stringify(value);
};

const isList = (value: Map<string, RosVal>): boolean =>
  value.size > 0 && [...value.keys()].every((k, i) => k === String(i));

/** A health command's plain value as the interpreter's value (records become arrays, times RosTime). */
const fromHealth = (value: HealthValue): RosVal => {
  if (Array.isArray(value)) {
    return new Map(
      value.map((record, i) => [
        String(i),
        new Map<string, RosVal>(
          Object.entries(record).map(([k, v]) => [k, typeof v === "object" ? new RosTime(v.seconds) : v]),
        ),
      ]),
    );
  }
  if (value && typeof value === "object" && "seconds" in value) return new RosTime(value.seconds);
  return value;
};

/** `<`, `>`, `+`, `*`, `/` on numbers, and a time times or plus a number as RouterOS does it. */
const arithmetic = (op: "<" | ">" | "+" | "*" | "/", left: RosVal, right: RosVal): RosVal => {
  const number = (v: RosVal): number => {
    if (typeof v === "number") return v;
    if (v instanceof RosTime) return v.seconds;
    if (typeof v === "string" && /^-?\d+$/.test(v)) return Number(v);
    throw new RouterOsRuntimeError(`cannot use ${str(v)} in arithmetic`);
  };
  const a = number(left);
  const b = number(right);
  switch (op) {
    case "<":
      return a < b;
    case ">":
      return a > b;
    case "+":
      return left instanceof RosTime ? new RosTime(a + b) : a + b;
    case "*":
      return left instanceof RosTime || right instanceof RosTime ? new RosTime(a * b) : a * b;
    case "/":
      if (b === 0) throw new RouterOsRuntimeError("division by zero");
      return left instanceof RosTime && !(right instanceof RosTime) ? new RosTime(a / b) : Math.trunc(a / b);
  }
};

const NOT_HEALTH = Symbol("not a health command");

class Scope {
  readonly vars = new Map<string, RosVal>();
  readonly parent: Scope | undefined;
  constructor(parent?: Scope) {
    this.parent = parent;
  }
  find(name: string): Scope | undefined {
    if (this.vars.has(name)) return this;
    return this.parent?.find(name);
  }
}

export class RouterOsDevice {
  readonly options: RouterOsDeviceOptions;
  readonly log: Array<{ topic: string; message: string }> = [];
  readonly deviceMode: { fetch: boolean; scheduler: boolean };
  readonly tables: Record<TableName, Item[]> = {
    "user group": [],
    user: [],
    "user ssh-keys": [],
    "system script": [],
    "system scheduler": [],
    file: [],
    "interface wireguard": [],
    "interface wireguard peers": [],
    "ip address": [],
    "ip route": [],
    "ip firewall filter": [],
  };
  /** Settings, binary backups, updates and reboots (routeros-device-system.ts). */
  readonly system: RouterOsSystem;
  /** `/system resource get version`: changes when an update is installed. */
  version: string;
  /** Milliseconds since the epoch at boot: a reboot moves it. */
  bootedAt: number;
  readonly health: SimulatedHealth;
  #nextId = 1;
  #timers = new Map<string, NodeJS.Timeout>();
  #identity: string;

  constructor(options: RouterOsDeviceOptions) {
    this.options = options;
    this.deviceMode = { ...(options.deviceMode ?? { fetch: true, scheduler: true }) };
    this.#identity = options.identity;
    this.version = options.version;
    this.bootedAt = options.bootedAt;
    this.system = new RouterOsSystem(this, options.system);
    this.health = options.health ?? new SimulatedHealth(healthSeed(options.serialNumber), options.routerboard);
    this.tables["user group"].push(
      ...["read", "write", "full"].map((name) => ({ id: this.#id(), props: { name, policy: "", builtin: "yes" } })),
    );
    this.tables.user.push({ id: this.#id(), props: { name: "admin", group: "full", address: "" } });
  }

  get identity(): string {
    return this.#identity;
  }

  set identity(name: string) {
    this.#identity = name;
  }

  /** Runs script text like the terminal or `/import` does; throws at the first error. */
  async run(text: string): Promise<void> {
    await this.#exec(parseRouterOsScript(text), new Scope(), "");
  }

  /** Stops every scheduler timer (the router powers off). */
  stop(): void {
    for (const timer of this.#timers.values()) clearInterval(timer);
    this.#timers.clear();
  }

  /**
   * RouterOS SSH login rule: the user exists, its group has the `ssh` policy, the client address
   * lies in the user's `address` list (empty: anywhere), and the key is one of the user's keys.
   */
  authorizes(username: string, keyBlob: Buffer, address: string): boolean {
    const user = this.tables.user.find((u) => u.props.name === username);
    if (!user || user.props.disabled === "yes") return false;
    const group = this.tables["user group"].find((g) => g.props.name === user.props.group);
    if (!group || !(group.props.policy ?? "").split(",").includes("ssh")) return false;
    const ipv4 = address.replace(/^::ffff:/, "");
    const allowed = (user.props.address ?? "").split(",").filter((a) => a !== "");
    if (allowed.length > 0 && !allowed.some((cidr) => inCidr(ipv4, cidr))) return false;
    return this.tables["user ssh-keys"]
      .filter((k) => k.props.user === username)
      .some((k) => {
        const parsed = ssh2.utils.parseKey(k.props.key ?? "");
        return !(parsed instanceof Error) && parsed.getPublicSSH().equals(keyBlob);
      });
  }

  /**
   * `/<menu> remove [find where k=v ...]` or `remove *1,*2` as the agent sends it over SSH
   * (offboarding, docs/routeros.md "Offboarding"): the output RouterOS would print, "" on success.
   * Menus the device has no table for hold nothing here.
   */
  removeWhere(
    menu: string,
    target: { find: Array<{ key: string; op: "=" | "~"; value: string }> } | { ids: string[] },
  ): string {
    if (!isTable(menu)) return "";
    const table = this.tables[menu];
    const ids =
      "ids" in target
        ? target.ids
        : table
            .filter((item) =>
              target.find.every((c) =>
                c.op === "=" ? item.props[c.key] === c.value : new RegExp(c.value).test(item.props[c.key] ?? ""),
              ),
            )
            .map((item) => item.id);
    try {
      this.#remove(menu, table, { ids });
      // The tunnel's real end (`--netns`) follows, as after the script's own changes; the SSH
      // answer does not wait for it (removing the tunnel may end the session that asked).
      if (ids.length > 0) void this.#tunnelChanged(menu).catch(() => {});
      return "";
    } catch (error) {
      return error instanceof Error ? error.message : String(error);
    }
  }

  #id(): string {
    return `*${(this.#nextId++).toString(16).toUpperCase()}`;
  }

  #nowMs(): number {
    return (this.options.clock ?? systemClock).nowMs();
  }

  async #exec(statements: readonly Statement[], scope: Scope, menu: string): Promise<RosVal> {
    let last: RosVal;
    for (const statement of statements) last = await this.#statement(statement, scope, menu);
    return last;
  }

  async #statement(s: Statement, scope: Scope, menu: string): Promise<RosVal> {
    try {
      return s.kind === "global" ? await this.#global(s, scope, menu) : await this.#menu(s, scope, menu);
    } catch (error) {
      if (error instanceof RouterOsRuntimeError && !error.message.includes("(line ")) {
        throw new RouterOsRuntimeError(`${error.message} (line ${s.line})`);
      }
      throw error;
    }
  }

  async #eval(e: Expr | undefined, scope: Scope, menu: string): Promise<RosVal> {
    if (e === undefined) return undefined;
    switch (e.kind) {
      case "str": {
        let out = "";
        for (const part of e.parts)
          out += typeof part === "string" ? part : str(scope.find(part.var)?.vars.get(part.var));
        return out;
      }
      case "word":
        if (e.value === "true" || e.value === "yes") return true;
        if (e.value === "false" || e.value === "no") return false;
        // A bare integer is a number to RouterOS (`:if ([:len $x] = 0)`).
        if (/^\d{1,15}$/.test(e.value)) return Number(e.value);
        return e.value;
      case "var": {
        const holder = scope.find(e.name);
        return holder?.vars.get(e.name);
      }
      case "sub":
        return this.#statement(e.statement, scope, menu);
      case "block":
        throw new RouterOsRuntimeError("a block is not a value");
      case "array":
        return new Map();
      case "not":
        return !(await this.#eval(e.value, scope, menu));
      case "binary": {
        const left = await this.#eval(e.left, scope, menu);
        const right = await this.#eval(e.right, scope, menu);
        if (e.op === "->") return left instanceof Map ? left.get(str(right)) : undefined;
        if (e.op !== "=" && e.op !== "!=") return arithmetic(e.op, left, right);
        const same = typeof left === typeof right ? str(left) === str(right) : false;
        return e.op === "=" ? same : !same;
      }
    }
  }

  #named(args: readonly Arg[], allowed: readonly string[], what: string): Map<string, Expr | undefined> {
    const named = new Map<string, Expr | undefined>();
    for (const arg of args) {
      if (arg.name === undefined) continue;
      if (!allowed.includes(arg.name))
        throw new RouterOsRuntimeError(`expected end of command: ${what} has no ${arg.name}`);
      named.set(arg.name, arg.value);
    }
    return named;
  }

  #positional(args: readonly Arg[]): Expr[] {
    return args.filter((a) => a.name === undefined && a.value !== undefined).map((a) => a.value as Expr);
  }

  async #global(s: Extract<Statement, { kind: "global" }>, scope: Scope, menu: string): Promise<RosVal> {
    const positional = this.#positional(s.args);
    switch (s.verb) {
      case "local":
      case "global": {
        const name = positional[0];
        if (name?.kind !== "word") throw new RouterOsRuntimeError("bad variable name");
        scope.vars.set(name.value, await this.#eval(positional[1], scope, menu));
        return undefined;
      }
      case "set": {
        const target = positional[0];
        const value = await this.#eval(positional[1], scope, menu);
        if (target?.kind === "word") {
          const holder = scope.find(target.value);
          if (!holder) throw new RouterOsRuntimeError(`no such variable ${target.value}`);
          holder.vars.set(target.value, value);
          return undefined;
        }
        if (target?.kind === "binary" && target.op === "->" && target.left.kind === "var") {
          const array = scope.find(target.left.name)?.vars.get(target.left.name);
          if (!(array instanceof Map)) throw new RouterOsRuntimeError(`${target.left.name} is not an array`);
          array.set(str(await this.#eval(target.right, scope, menu)), value);
          return undefined;
        }
        throw new RouterOsRuntimeError("bad :set target");
      }
      case "if": {
        const named = this.#named(s.args, ["do", "else"], ":if");
        const condition = await this.#eval(positional[0], scope, menu);
        if (typeof condition !== "boolean") throw new RouterOsRuntimeError("conditional not boolean");
        const branch = named.get(condition ? "do" : "else");
        if (branch?.kind === "block") await this.#exec(branch.body, new Scope(scope), menu);
        return undefined;
      }
      case "do": {
        const named = this.#named(s.args, ["on-error"], ":do");
        const body = positional[0];
        if (body?.kind !== "block") throw new RouterOsRuntimeError(":do needs a block");
        try {
          await this.#exec(body.body, new Scope(scope), menu);
        } catch (error) {
          const handler = named.get("on-error");
          if (!(error instanceof RouterOsRuntimeError) || handler?.kind !== "block") throw error;
          await this.#exec(handler.body, new Scope(scope), menu);
        }
        return undefined;
      }
      case "error":
        throw new RouterOsRuntimeError(str(await this.#eval(positional[0], scope, menu)));
      case "log": {
        const topic = str(await this.#eval(positional[0], scope, menu));
        if (!["info", "warning", "error", "debug"].includes(topic))
          throw new RouterOsRuntimeError(`bad log topic ${topic}`);
        this.log.push({ topic, message: str(await this.#eval(positional[1], scope, menu)) });
        return undefined;
      }
      case "put":
        this.log.push({ topic: "put", message: str(await this.#eval(positional[0], scope, menu)) });
        return undefined;
      case "delay": {
        // Real time, capped so that a hostile script cannot hold the router's command line.
        const ms = parseRouterOsInterval(str(await this.#eval(positional[0], scope, menu)) || "0s");
        if (ms === undefined) throw new RouterOsRuntimeError("bad time interval");
        await new Promise((resolve) => setTimeout(resolve, Math.min(ms, 60_000)));
        return undefined;
      }
      case "tostr":
        return str(await this.#eval(positional[0], scope, menu));
      case "toarray": {
        const value = await this.#eval(positional[0], scope, menu);
        if (value instanceof Map) return value;
        const parts = str(value) === "" ? [] : str(value).split(",");
        return new Map<string, RosVal>(parts.map((part, i) => [String(i), part]));
      }
      case "tonum": {
        const value = await this.#eval(positional[0], scope, menu);
        if (typeof value === "number") return value;
        // A time value becomes its whole seconds.
        if (value instanceof RosTime) return Math.floor(value.seconds);
        return typeof value === "string" && /^-?\d+$/.test(value) ? Number(value) : undefined;
      }
      case "typeof": {
        const value = await this.#eval(positional[0], scope, menu);
        if (value === undefined) return "nothing";
        if (value instanceof RosTime) return "time";
        if (value instanceof Map || typeof value === "object") return "array";
        return typeof value === "number" ? "num" : typeof value === "boolean" ? "bool" : "str";
      }
      case "foreach": {
        const named = this.#named(s.args, ["in", "do"], ":foreach");
        const name = positional[0];
        if (name?.kind !== "word") throw new RouterOsRuntimeError("bad variable name");
        const body = named.get("do");
        if (body?.kind !== "block") throw new RouterOsRuntimeError(":foreach needs do={...}");
        const over = await this.#eval(named.get("in"), scope, menu);
        const items: RosVal[] =
          over instanceof Map
            ? [...over.values()]
            : over && typeof over === "object" && "ids" in over
              ? over.ids
              : over === undefined
                ? []
                : [over];
        for (const item of items) {
          const inner = new Scope(scope);
          inner.vars.set(name.value, item);
          await this.#exec(body.body, inner, menu);
        }
        return undefined;
      }
      case "len": {
        const value = await this.#eval(positional[0], scope, menu);
        if (value instanceof Map) return value.size;
        if (value && typeof value === "object" && "ids" in value) return value.ids.length;
        return str(value).length;
      }
      case "serialize": {
        const named = this.#named(s.args, ["to", "value", "options"], ":serialize");
        if (named.has("options") && !this.#versionAtLeast(7, 17)) {
          throw new RouterOsRuntimeError("expected end of command: :serialize has no options before 7.17");
        }
        if (str(await this.#eval(named.get("to"), scope, menu)) !== "json")
          throw new RouterOsRuntimeError("to=json only");
        const options = str(await this.#eval(named.get("options"), scope, menu));
        return serializeJson(
          await this.#eval(named.get("value"), scope, menu),
          options === "json.no-string-conversion",
        );
      }
      default:
        throw new RouterOsRuntimeError(`:${s.verb} is not simulated`);
    }
  }

  #versionAtLeast(major: number, minor: number): boolean {
    const [a, b] = this.version.split(/[. ]/).map(Number);
    return (a ?? 0) > major || ((a ?? 0) === major && (b ?? 0) >= minor);
  }

  async #menu(s: Extract<Statement, { kind: "menu" }>, scope: Scope, outer: string): Promise<RosVal> {
    const menu = s.path.length > 0 || s.verb === "import" || s.verb === "ping" ? s.path.join(" ") : outer;
    const positional = this.#positional(s.args);
    switch (`${menu}|${s.verb}`) {
      case "system device-mode|get":
        return this.#get(
          positional,
          { fetch: this.deviceMode.fetch, scheduler: this.deviceMode.scheduler, mode: "enterprise" },
          scope,
          menu,
        );
      case "system identity|get":
        return this.#get(positional, { name: this.#identity }, scope, menu);
      case "system resource|get":
        return this.#get(
          positional,
          {
            version: this.version,
            "board-name": this.options.boardName,
            uptime: new RosTime((this.#nowMs() - this.bootedAt) / 1000),
            ...this.#resourceProps(),
          },
          scope,
          menu,
        );
      case "system routerboard|get":
        return this.#get(
          positional,
          this.options.routerboard
            ? { routerboard: true, "serial-number": this.options.serialNumber, model: this.options.model }
            : { routerboard: false },
          scope,
          menu,
        );
      case "system license|get":
        return this.#get(
          positional,
          this.options.routerboard
            ? { "software-id": this.options.licenseId }
            : { "system-id": this.options.licenseId },
          scope,
          menu,
        );
      case "tool|fetch":
        return this.#fetch(s.args, scope, menu);
      case "|import": {
        const named = this.#named(s.args, ["file-name", "verbose"], "/import");
        const name = str(await this.#eval(named.get("file-name") ?? positional[0], scope, menu));
        const file = this.tables.file.find((f) => f.props.name === name);
        if (!file) throw new RouterOsRuntimeError(`no such file ${name}`);
        await this.#exec(parseRouterOsScript(file.props.contents ?? ""), new Scope(), "");
        return undefined;
      }
      case "system script|run": {
        const name = str(await this.#eval(positional[0], scope, menu));
        const script = this.tables["system script"].find((i) => i.props.name === name || i.id === name);
        if (!script) throw new RouterOsRuntimeError("no such item");
        await this.#exec(parseRouterOsScript(script.props.source ?? ""), new Scope(), "");
        return undefined;
      }
      default:
        break;
    }
    const system = await this.system.command(
      menu,
      s.verb,
      await this.#namedValues(s.args, scope, menu),
      await Promise.all(positional.map(async (p) => str(await this.#eval(p, scope, menu)))),
    );
    if (system !== NOT_SYSTEM) return system;
    const health = await this.#healthCommand(menu, s, positional, scope);
    if (health !== NOT_HEALTH) return health;
    if (!isTable(menu)) throw new RouterOsRuntimeError(`bad command name ${s.verb} in /${menu}`);
    const table = this.tables[menu];
    switch (s.verb) {
      case "find": {
        const conditions = s.args.filter((a) => a.name !== undefined);
        const where = positional.filter((p) => !(p.kind === "word" && p.value === "where"));
        if (where.length > 0) throw new RouterOsRuntimeError("find: only name=value conditions are simulated");
        const wanted: Array<[string, string]> = [];
        for (const c of conditions) wanted.push([c.name ?? "", str(await this.#eval(c.value, scope, menu))]);
        return { ids: table.filter((item) => wanted.every(([k, v]) => item.props[k] === v)).map((item) => item.id) };
      }
      case "remove": {
        const result = this.#remove(menu, table, await this.#eval(positional[0], scope, menu));
        await this.#tunnelChanged(menu);
        return result;
      }
      case "add": {
        const result = await this.#add(menu, table, s.args, scope);
        await this.#tunnelChanged(menu);
        return result;
      }
      case "get": {
        const target = await this.#eval(positional[0], scope, menu);
        const ids = target && typeof target === "object" && "ids" in target ? target.ids : [str(target)];
        const item = table.find((i) => i.id === ids[0] || i.props.name === ids[0]);
        if (!item || ids.length !== 1) throw new RouterOsRuntimeError("no such item");
        const name = str(await this.#eval(positional[1], scope, menu));
        if (!(name in item.props))
          throw new RouterOsRuntimeError(`input does not match any value of value-name: ${name}`);
        return item.props[name];
      }
      case "move": {
        // `move numbers destination=N`: the items keep their order and go before position N.
        const named = this.#named(s.args, ["destination", "numbers"], `/${menu} move`);
        const target = await this.#eval(named.get("numbers") ?? positional[0], scope, menu);
        const ids = target && typeof target === "object" && "ids" in target ? target.ids : [str(target)];
        const moving = table.filter((i) => ids.includes(i.id));
        if (moving.length !== ids.length) throw new RouterOsRuntimeError("no such item");
        const destination = Number(str(await this.#eval(named.get("destination"), scope, menu)));
        if (!Number.isInteger(destination) || destination < 0) throw new RouterOsRuntimeError("bad destination");
        const rest = table.filter((i) => !ids.includes(i.id));
        table.splice(0, table.length, ...rest.slice(0, destination), ...moving, ...rest.slice(destination));
        await this.#tunnelChanged(menu);
        return undefined;
      }
      default:
        throw new RouterOsRuntimeError(`/${menu} ${s.verb} is not simulated`);
    }
  }

  async #namedValues(args: readonly Arg[], scope: Scope, menu: string): Promise<Map<string, string>> {
    const values = new Map<string, string>();
    for (const arg of args)
      if (arg.name !== undefined) values.set(arg.name, str(await this.#eval(arg.value, scope, menu)));
    return values;
  }

  /** `/system resource`'s measured properties (docs/routeros.md "Health"). */
  #resourceProps(): Record<string, RosVal> {
    const r = this.health.resources(this.#nowMs());
    return {
      "cpu-load": r.cpuLoad,
      "total-memory": r.totalMemory,
      "free-memory": r.freeMemory,
      "total-hdd-space": r.totalHdd,
      "free-hdd-space": r.freeHdd,
    };
  }

  /** `/system health`, `/interface` and `/ping` (health/health-commands.ts); NOT_HEALTH for other commands. */
  async #healthCommand(
    menu: string,
    s: Extract<Statement, { kind: "menu" }>,
    positional: Expr[],
    scope: Scope,
  ): Promise<RosVal | typeof NOT_HEALTH> {
    const key = `${menu}|${s.verb}`;
    if (!["system health|find", "system health|get", "interface|find", "interface|get", "|ping"].includes(key)) {
      return NOT_HEALTH;
    }
    const context = { health: this.health, nowMs: this.#nowMs(), bootedAtMs: this.bootedAt };
    const conditions = async (): Promise<FindConditions> => {
      const where = positional.filter((p) => !(p.kind === "word" && p.value === "where"));
      if (where.length > 0) throw new RouterOsRuntimeError("find: only name=value conditions are simulated");
      const out: FindConditions = [];
      for (const a of s.args) if (a.name !== undefined) out.push([a.name, str(await this.#eval(a.value, scope, menu))]);
      return out;
    };
    const target = async (): Promise<string | string[]> => {
      const value = await this.#eval(positional[0], scope, menu);
      return value && typeof value === "object" && "ids" in value ? value.ids : str(value);
    };
    try {
      switch (key) {
        case "system health|find":
          return findSensors(context, await conditions());
        case "interface|find":
          return findInterfaces(context, await conditions());
        case "system health|get":
          return fromHealth(getSensor(context, await target(), str(await this.#eval(positional[1], scope, menu))));
        case "interface|get":
          return fromHealth(getInterface(context, await target(), str(await this.#eval(positional[1], scope, menu))));
        default: {
          const args = new Map<string, string>();
          for (const a of s.args)
            if (a.name !== undefined) args.set(a.name, str(await this.#eval(a.value, scope, menu)));
          const flags = positional.map((p) => (p.kind === "word" ? p.value : "?"));
          if (flags.some((f) => f !== "as-value")) throw new RouterOsRuntimeError("expected end of command");
          return fromHealth(ping(context, args, flags.includes("as-value")));
        }
      }
    } catch (error) {
      if (error instanceof HealthCommandError) throw new RouterOsRuntimeError(error.message);
      throw error;
    }
  }

  async #get(positional: Expr[], props: Record<string, RosVal>, scope: Scope, menu: string): Promise<RosVal> {
    const name = str(await this.#eval(positional[0], scope, menu));
    if (!(name in props)) throw new RouterOsRuntimeError(`input does not match any value of value-name: ${name}`);
    return props[name];
  }

  #remove(menu: TableName, table: Item[], target: RosVal): RosVal {
    const ids =
      target && typeof target === "object" && "ids" in target
        ? target.ids
        : table.filter((i) => i.props.name === str(target) || i.id === str(target)).map((i) => i.id);
    if (!(target && typeof target === "object" && "ids" in target) && ids.length === 0) {
      throw new RouterOsRuntimeError("no such item");
    }
    for (const id of ids) {
      const item = table.find((i) => i.id === id);
      if (!item) continue;
      if (menu === "user group" && this.tables.user.some((u) => u.props.group === item.props.name)) {
        throw new RouterOsRuntimeError("failure: group is in use");
      }
      if (menu === "user group" && item.props.builtin === "yes")
        throw new RouterOsRuntimeError("failure: default group");
      if (menu === "system scheduler") {
        clearInterval(this.#timers.get(id));
        this.#timers.delete(id);
      }
      table.splice(table.indexOf(item), 1);
    }
    return undefined;
  }

  async #add(menu: TableName, table: Item[], args: readonly Arg[], scope: Scope): Promise<RosVal> {
    const allowed = TABLE_ARGS[menu];
    const named = this.#named(args, allowed, `/${menu} add`);
    if (this.#positional(args).length > 0) throw new RouterOsRuntimeError("expected end of command");
    const props: Record<string, string> = {};
    for (const [name, value] of named) props[name] = str(await this.#eval(value, scope, menu));
    const fail = (message: string): never => {
      throw new RouterOsRuntimeError(`failure: ${message}`);
    };
    if (NAMED_TABLES.has(menu) && !props.name) fail("name must be set");
    if (props.name && table.some((i) => i.props.name === props.name))
      fail(`an item named ${props.name} already exists`);
    const policies = (props.policy ?? "").split(",").filter((p) => p !== "");
    for (const policy of policies) if (!POLICIES.has(policy)) fail(`unknown policy ${policy}`);
    if (menu === "user") {
      if (!this.tables["user group"].some((g) => g.props.name === props.group)) fail("unknown group");
      for (const cidr of (props.address ?? "").split(",").filter((a) => a !== "")) {
        if (!/^\d{1,3}(\.\d{1,3}){3}(\/\d{1,2})?$/.test(cidr)) fail(`bad address ${cidr}`);
      }
    }
    if (menu === "user ssh-keys") {
      if (!this.tables.user.some((u) => u.props.name === props.user)) fail("no such user");
      const parsed = ssh2.utils.parseKey(props.key ?? "");
      if (parsed instanceof Error || !["ssh-ed25519", "ssh-rsa"].includes(parsed.type)) fail("unable to load key");
    }
    if (menu === "interface wireguard") {
      // The router makes its own key pair; the private key never leaves it.
      const pair = generateWireguardKeyPair();
      props["private-key"] = props["private-key"] ?? pair.privateKey;
      props["public-key"] = pair.privateKey === props["private-key"] ? pair.publicKey : "";
      if (!props["public-key"]) fail("private-key is set by the router in this simulator");
      props["listen-port"] = props["listen-port"] ?? String(13231);
    }
    if (menu === "interface wireguard peers") {
      if (!this.tables["interface wireguard"].some((i) => i.props.name === props.interface)) fail("no such interface");
      if (!isWireguardKey(props["public-key"])) fail("invalid public-key");
    }
    if (menu === "ip address" || menu === "ip route") {
      const cidr = props.address ?? props["dst-address"] ?? "";
      if (!/^\d{1,3}(\.\d{1,3}){3}\/\d{1,2}$/.test(cidr)) fail(`bad address ${cidr}`);
    }
    if (menu === "system scheduler") {
      if (!this.deviceMode.scheduler) fail("not allowed by device-mode");
      if (parseRouterOsInterval(props.interval ?? "0s") === undefined) fail(`bad interval ${props.interval}`);
    }
    const item = { id: this.#id(), props };
    table.push(item);
    if (menu === "system scheduler") this.#schedule(item);
    return item.id;
  }

  /**
   * Arms a scheduler entry's timer: every `interval` (the first run one interval after it was
   * added or booted), or once at `start-time` (a time of day, UTC) when the interval is 0s.
   */
  #schedule(item: Item): void {
    const intervalMs = parseRouterOsInterval(item.props.interval ?? "0s");
    if (item.props.disabled === "yes") return;
    const at = /^(\d{2}):(\d{2}):(\d{2})$/.exec(item.props["start-time"] ?? "");
    if (!intervalMs && at) {
      const now = new Date(this.#nowMs());
      let due = Date.UTC(
        now.getUTCFullYear(),
        now.getUTCMonth(),
        now.getUTCDate(),
        Number(at[1]),
        Number(at[2]),
        Number(at[3]),
      );
      if (due <= now.getTime()) due += 86_400_000;
      const timer = setTimeout(() => {
        this.#timers.delete(item.id);
        void this.#runScheduled(item);
      }, due - now.getTime());
      timer.unref();
      this.#timers.set(item.id, timer);
      return;
    }
    if (!intervalMs) return;
    const timer = setInterval(() => void this.#runScheduled(item), intervalMs);
    timer.unref();
    this.#timers.set(item.id, timer);
  }

  async #runScheduled(item: Item): Promise<void> {
    await this.run(item.props["on-event"] ?? "").catch((error: unknown) => {
      this.log.push({ topic: "error", message: `scheduler ${item.props.name}: ${(error as Error).message}` });
    });
  }

  /** The configuration a reboot keeps (users, groups, keys, scripts, scheduler, files), as plain JSON. */
  snapshot(): DeviceSnapshot {
    return { nextId: this.#nextId, tables: structuredClone(this.tables) };
  }

  /**
   * Powers the router on with a saved configuration (docs/routeros.md "Simulator": adopted routers
   * come back): scheduler timers are armed again and every `start-time=startup` entry runs once,
   * as RouterOS runs them at boot. Resolves when those startup runs have finished.
   */
  async boot(saved: DeviceSnapshot): Promise<void> {
    this.stop();
    this.#nextId = saved.nextId;
    for (const name of Object.keys(this.tables) as TableName[])
      this.tables[name] = structuredClone(saved.tables[name] ?? []);
    const entries = this.tables["system scheduler"];
    for (const item of entries) this.#schedule(item);
    for (const item of entries) {
      if (item.props["start-time"] === "startup" && item.props.disabled !== "yes") await this.#runScheduled(item);
    }
  }

  async #tunnelChanged(menu: TableName): Promise<void> {
    if (!TUNNEL_TABLES.has(menu) || !this.options.onTunnelChange) return;
    try {
      await this.options.onTunnelChange(this);
    } catch (error) {
      throw new RouterOsRuntimeError(`failure: ${(error as Error).message}`);
    }
  }

  /** Items of a table (the `--netns` tunnel reads the WireGuard ones). */
  items(menu: TableName): ReadonlyArray<{ id: string; props: Readonly<Record<string, string>> }> {
    return this.tables[menu];
  }

  async #fetch(args: readonly Arg[], scope: Scope, menu: string): Promise<RosVal> {
    const named = this.#named(
      args,
      [
        "url",
        "http-method",
        "http-header-field",
        "http-data",
        "output",
        "dst-path",
        "mode",
        "check-certificate",
        "keep-result",
      ],
      "/tool fetch",
    );
    for (const p of this.#positional(args)) {
      if (!(p.kind === "word" && p.value === "as-value")) throw new RouterOsRuntimeError("expected end of command");
    }
    if (!this.deviceMode.fetch) throw new RouterOsRuntimeError("failure: not allowed by device-mode");
    if (!this.system.reachable) throw new RouterOsRuntimeError("failure: connection failed (no route to host)");
    const value = async (name: string) =>
      named.has(name) ? str(await this.#eval(named.get(name), scope, menu)) : undefined;
    const url = await value("url");
    if (!url || !/^https?:\/\//.test(url)) throw new RouterOsRuntimeError("failure: url is required");
    const method = (await value("http-method")) ?? "get";
    const headers: Array<[string, string]> = [];
    const field = await value("http-header-field");
    // RouterOS separates header lines with commas (https://help.mikrotik.com/docs/display/ROS/Fetch).
    for (const line of field ? field.split(",") : []) {
      const colon = line.indexOf(":");
      if (colon < 1) throw new RouterOsRuntimeError(`failure: bad header ${line}`);
      headers.push([line.slice(0, colon).trim(), line.slice(colon + 1).trim()]);
    }
    const body = await value("http-data");
    let response: HttpResponse;
    try {
      response = await this.options.http({ method: method.toUpperCase(), url, headers, body });
    } catch (error) {
      throw new RouterOsRuntimeError(`failure: connection failed (${(error as Error).message})`);
    }
    if (response.status < 200 || response.status > 299) {
      throw new RouterOsRuntimeError(`failure: closing connection: <${response.status}> ${new URL(url).host}`);
    }
    const output = (await value("output")) ?? "file";
    if (output === "user")
      return new Map<string, RosVal>([
        ["status", "finished"],
        ["data", response.body],
      ]);
    if (output === "file") {
      const name = (await value("dst-path")) ?? new URL(url).pathname.split("/").pop() ?? "fetched";
      this.tables.file = this.tables.file.filter((f) => f.props.name !== name);
      this.tables.file.push({ id: this.#id(), props: { name, contents: response.body } });
    }
    return undefined;
  }
}
