import { timingSafeEqual } from "node:crypto";
import { readRouterOsString } from "@fleet/shared";
import ipaddr from "ipaddr.js";

/**
 * The simulated router's local users, groups, scheduler entries and IP addresses, as far as
 * temporary router access needs them (docs/routeros.md "Simulator"): the agent adds a group, a
 * user with a password and a self-removing scheduler entry; the user logs in with the password over
 * SSH from an allowed address and may then do only what its group's policy lets it (a `read` user's
 * `/ip address add` fails); `/user active request-logout` ends its sessions. Menus handled here are
 * `/user`, `/user group`, `/user active`, `/system scheduler` and `/ip address`; anything else is
 * not this module's (the caller's parser answers it, loudly when unknown).
 */

export interface SimUser {
  name: string;
  group: string;
  password: string;
  address: string;
  comment: string;
}

interface Group {
  name: string;
  policy: string[];
}

interface SchedulerEntry {
  name: string;
  onEvent: string;
  /** Who added it (undefined: the agent); only its owner or a user with `policy` may change it. */
  owner: string | undefined;
  policy: string[];
  timer: NodeJS.Timeout;
}

type Args = { positional: string[]; named: Map<string, string>; find: Map<string, string> | undefined };

const MENUS = [["user", "active"], ["user", "group"], ["system", "scheduler"], ["ip", "address"], ["user"]] as const;

const WRITE_VERBS = new Set(["add", "remove", "set", "request-logout"]);
const VERBS = new Set([...WRITE_VERBS, "print"]);

const BUILTIN_GROUPS = new Set(["full", "read", "write"]);

class UsersError extends Error {}

/** Splits `key=value`, bare words and one `[find where k="v" ...]` block, with RouterOS string escapes. */
const tokenize = (text: string): Args => {
  const args: Args = { positional: [], named: new Map(), find: undefined };
  let i = 0;
  const readValue = (): string => {
    if (text[i] === '"') {
      const read = readRouterOsString(text, i);
      i = read.end;
      return read.value;
    }
    const start = i;
    while (i < text.length && !/[\s[\]]/.test(text[i] ?? "")) i++;
    return text.slice(start, i);
  };
  while (i < text.length) {
    const c = text[i] ?? "";
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    if (c === "[") {
      const close = text.indexOf("]", i);
      if (close === -1) throw new UsersError(`syntax error (line 1 column ${i + 1})`);
      const inner = tokenize(text.slice(i + 1, close));
      if (inner.positional[0] !== "find") throw new UsersError(`syntax error (line 1 column ${i + 2})`);
      args.find = inner.named;
      i = close + 1;
      continue;
    }
    if (c === "]") throw new UsersError(`syntax error (line 1 column ${i + 1})`);
    const start = i;
    while (i < text.length && /[a-z0-9.-]/.test(text[i] ?? "")) i++;
    const name = text.slice(start, i);
    if (text[i] === "=" && name !== "") {
      i++;
      args.named.set(name, readValue());
    } else {
      i = start;
      const word = readValue();
      if (word === "") throw new UsersError(`syntax error (line 1 column ${i + 1})`);
      args.positional.push(word);
    }
  }
  return args;
};

const matches = (props: Record<string, string>, find: Map<string, string> | undefined) =>
  find === undefined || [...find].every(([k, v]) => props[k] === v);

export class RouterOsUsers {
  readonly #groups = new Map<string, Group>([
    ["full", { name: "full", policy: ["read", "write", "policy", "ssh", "winbox", "web", "test", "reboot"] }],
    ["read", { name: "read", policy: ["read", "ssh", "winbox", "web", "test"] }],
  ]);
  readonly #users = new Map<string, SimUser>();
  readonly #scheduler = new Map<string, SchedulerEntry>();
  readonly #addresses: Array<{ address: string; interface: string }> = [
    { address: "192.168.88.1/24", interface: "bridge" },
  ];
  readonly #logout: (username: string) => number;

  /** `logout` ends the SSH sessions of a user and says how many. */
  constructor(logout: (username: string) => number) {
    this.#logout = logout;
  }

  /**
   * Whether this module answers the command: one of its menus followed by one of its verbs. Other
   * words after a menu (`/user ssh-keys ...`, a typo) are not its: the caller's parser answers them.
   */
  static handles(line: string): boolean {
    if (!line.trim().startsWith("/")) return false;
    const words = line.trim().replace(/^\//, "").split(/\s+/);
    const menu = MENUS.find((m) => m.every((w, i) => words[i] === w));
    return menu !== undefined && VERBS.has(words[menu.length] ?? "");
  }

  users(): SimUser[] {
    return [...this.#users.values()].map((u) => ({ ...u }));
  }

  schedulerEntries(): string[] {
    return [...this.#scheduler.keys()];
  }

  /** RouterOS's SSH password login: the user exists, its group has `ssh`, the client is inside `address`. */
  passwordLogin(username: string, password: string, from: string): boolean {
    const user = this.#users.get(username);
    if (!user) return false;
    const a = Buffer.from(user.password);
    const b = Buffer.from(password);
    if (a.length !== b.length || !timingSafeEqual(a, b)) return false;
    if (!this.#policy(user.name).includes("ssh")) return false;
    return user.address === "" || user.address.split(",").some((spec) => inside(from, spec));
  }

  /** The lines of `/export terse` for what this module holds (no passwords: they are sensitive). */
  exportLines(): string[] {
    const lines: string[] = [];
    const groups = [...this.#groups.values()].filter((g) => g.name !== "full" && g.name !== "read");
    if (groups.length > 0)
      lines.push("/user group", ...groups.map((g) => `add name=${g.name} policy=${g.policy.join(",")}`));
    if (this.#users.size > 0) {
      lines.push(
        "/user",
        ...[...this.#users.values()].map((u) => `add address=${u.address} group=${u.group} name=${u.name}`),
      );
    }
    if (this.#scheduler.size > 0)
      lines.push("/system scheduler", ...[...this.#scheduler.keys()].map((n) => `add name=${n}`));
    return lines;
  }

  /** Every group with its policy (the built-in ones included). */
  groups(): Array<{ name: string; policy: string[] }> {
    return [...this.#groups.values()].map((g) => ({ name: g.name, policy: [...g.policy] }));
  }

  /** The policy of a logged-in user's group. */
  policyOf(username: string): string[] {
    return this.#policy(username);
  }

  #policy(username: string): string[] {
    const user = this.#users.get(username);
    return user ? (this.#groups.get(user.group)?.policy ?? []) : [];
  }

  /**
   * Runs one command as `user` (undefined: the agent, with its full management group). A user
   * without `write` can read but not change anything, as RouterOS answers it.
   */
  execute(line: string, user?: string): string {
    const trimmed = line.trim().replace(/^\//, "");
    const menu = MENUS.find((m) => m.every((w, i) => trimmed.split(/\s+/)[i] === w));
    if (!menu) return `bad command name ${trimmed.split(/\s+/)[0] ?? ""} (line 1 column 2)`;
    const rest = trimmed.split(/\s+/).slice(menu.length).join(" ");
    const verb = rest.split(/\s+/)[0] ?? "";
    let args: Args;
    try {
      args = tokenize(rest.slice(verb.length));
    } catch (error) {
      return error instanceof UsersError ? error.message : `syntax error: ${(error as Error).message}`;
    }
    if (user !== undefined) {
      const refused = this.#refusal(user, menu.join(" "), verb, args);
      if (refused) return refused;
    }
    const key = `${menu.join(" ")}|${verb}`;
    switch (key) {
      case "user group|add": {
        const name = args.named.get("name") ?? "";
        if (this.#groups.has(name)) return "failure: group with the same name already exists";
        this.#groups.set(name, { name, policy: (args.named.get("policy") ?? "").split(",").filter(Boolean) });
        return "";
      }
      case "user group|set": {
        for (const group of this.#groups.values()) {
          if (matches({ name: group.name }, args.find) && args.named.has("policy")) {
            group.policy = (args.named.get("policy") ?? "").split(",").filter(Boolean);
          }
        }
        return "";
      }
      case "user group|remove": {
        for (const group of [...this.#groups.values()]) {
          if (BUILTIN_GROUPS.has(group.name) || !matches({ name: group.name }, args.find)) continue;
          if ([...this.#users.values()].some((u) => u.group === group.name)) return "failure: group is in use";
          this.#groups.delete(group.name);
        }
        return "";
      }
      case "user|add": {
        const name = args.named.get("name") ?? "";
        if (this.#users.has(name)) return "failure: user with the same name already exists";
        const group = args.named.get("group") ?? "";
        if (!this.#groups.has(group)) return "input does not match any value of group";
        this.#users.set(name, {
          name,
          group,
          password: args.named.get("password") ?? "",
          address: args.named.get("address") ?? "",
          comment: args.named.get("comment") ?? "",
        });
        return "";
      }
      case "user|remove": {
        for (const u of [...this.#users.values()]) if (matches({ ...u }, args.find)) this.#users.delete(u.name);
        return "";
      }
      case "user|print":
        return [...this.#users.values()]
          .map((u, n) => `${String(n).padStart(2)}   name=${u.name} group=${u.group} address=${u.address}`)
          .join("\r\n");
      case "user active|request-logout": {
        for (const u of [...this.#users.values()]) if (matches({ name: u.name }, args.find)) this.#logout(u.name);
        return "";
      }
      case "system scheduler|add": {
        const name = args.named.get("name") ?? "";
        if (this.#scheduler.has(name)) return "failure: item with such name already exists";
        const seconds = /^(\d+)s$/.exec(args.named.get("interval") ?? "");
        if (!seconds?.[1]) return "failure: invalid interval";
        const onEvent = args.named.get("on-event") ?? "";
        const policy = (args.named.get("policy") ?? "").split(",").filter(Boolean);
        const timer = setTimeout(() => this.#fire(name), Number(seconds[1]) * 1000);
        timer.unref();
        this.#scheduler.set(name, { name, onEvent, owner: user, policy, timer });
        return "";
      }
      case "system scheduler|remove": {
        for (const entry of [...this.#scheduler.values()]) {
          if (matches({ name: entry.name }, args.find)) {
            clearTimeout(entry.timer);
            this.#scheduler.delete(entry.name);
          }
        }
        return "";
      }
      case "ip address|add": {
        const address = args.named.get("address") ?? "";
        this.#addresses.push({ address, interface: args.named.get("interface") ?? "bridge" });
        return "";
      }
      case "ip address|remove": {
        // Offboarding takes the management tunnel's tagged address off (docs/routeros.md
        // "Offboarding"); the router's own addresses carry no such comment and stay.
        if (args.find === undefined) return "no such item";
        for (const a of [...this.#addresses]) {
          if (matches({ ...a }, args.find)) this.#addresses.splice(this.#addresses.indexOf(a), 1);
        }
        return "";
      }
      case "ip address|print":
        return this.#addresses
          .map((a, n) => `${String(n).padStart(2)}   address=${a.address} interface=${a.interface}`)
          .join("\r\n");
      default:
        return `bad command name ${verb} (line 1 column ${line.indexOf(verb, line.indexOf(menu.at(-1) ?? "") + 1) + 1})`;
    }
  }

  /**
   * RouterOS's permission check for a password user (undefined: allowed): `read` to do anything,
   * `policy` to change users, groups and sessions, `write` to change the rest; a scheduler entry
   * another user owns takes `policy` too, and a new one may not carry a right its author lacks.
   */
  #refusal(user: string, menu: string, verb: string, args: Args): string | undefined {
    const refused = "failure: not enough permissions (9)";
    const policy = this.#policy(user);
    if (!policy.includes("read")) return refused;
    if (!WRITE_VERBS.has(verb)) return undefined;
    if (!policy.includes(menu.startsWith("user") ? "policy" : "write")) return refused;
    if (menu !== "system scheduler" || policy.includes("policy")) return undefined;
    if (verb === "add") {
      const wanted = (args.named.get("policy") ?? "").split(",").filter(Boolean);
      return wanted.every((p) => policy.includes(p)) ? undefined : refused;
    }
    const others = [...this.#scheduler.values()].some((e) => matches({ name: e.name }, args.find) && e.owner !== user);
    return others ? refused : undefined;
  }

  /** A scheduler entry's time came: its script runs as the system, one command after another. */
  #fire(name: string): void {
    const entry = this.#scheduler.get(name);
    if (!entry) return;
    for (const part of entry.onEvent.split(/;\s*/)) if (part.trim()) this.execute(part);
  }

  /** Runs every scheduler entry's script now (tests stand in for the router's clock). */
  fireAll(): void {
    for (const name of [...this.#scheduler.keys()]) this.#fire(name);
  }

  close(): void {
    for (const entry of this.#scheduler.values()) clearTimeout(entry.timer);
    this.#scheduler.clear();
  }
}

function inside(address: string, spec: string): boolean {
  try {
    const ip = ipaddr.process(address);
    if (ip.kind() !== "ipv4") return false;
    return spec.includes("/") ? ip.match(ipaddr.IPv4.parseCIDR(spec)) : ip.toString() === spec;
  } catch {
    return false;
  }
}
