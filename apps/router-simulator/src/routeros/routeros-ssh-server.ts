import { createHash, timingSafeEqual } from "node:crypto";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import type { AuthContext, Connection, ParsedKey, ServerChannel } from "ssh2";
import ssh2 from "ssh2";
import { type ConfigMenu, parseRouterOsCommand, type Target } from "./routeros-cli-parser.ts";
import { type LanResolver, type NatRule, RouterOsNatTable } from "./routeros-nat-table.ts";
import { RouterOsUsers, type SimUser } from "./routeros-users.ts";
import { generateEd25519KeyPair } from "@fleet/shared";

const { Server, utils } = ssh2;

export type { LanResolver, NatRule };

export interface RouterOsSshServerOptions {
  /** The router's tunnel_ip: SSH and every dst-nat listener bind here. */
  host: string;
  /** SSH port; 0 picks a free one. */
  port: number;
  /** OpenSSH private key; an ed25519 key is generated when absent. */
  hostKey?: string | Buffer;
  /** OpenSSH public keys allowed to log in; empty or undefined accepts any correctly signed key. */
  authorizedKeys?: Array<string | Buffer>;
  /** When set, any other login name is refused. */
  username?: string;
  /**
   * When set, decides logins instead of `username`/`authorizedKeys`: the RouterOS users, groups and
   * keys an adoption script created (docs/routeros.md "Simulator"). The signature is still checked.
   */
  authorize?: (username: string, publicKey: Buffer, address: string) => boolean;
  /** Maps a simulated LAN address to a real loopback endpoint. */
  lan: LanResolver;
  /**
   * The device's configuration tables (an adopted router's users, keys, scripts, scheduler), for
   * the removals offboarding sends; without it those tables are empty and a removal finds nothing.
   */
  configuration?: ConfigurationTables;
  /** Delay before each command is answered, to simulate a slow router. */
  commandDelayMs?: number;
  /**
   * What `/export terse` answers instead of the simulated configuration (given as `standard`): a
   * hostile or broken router (an export of hundreds of megabytes, one holding NUL) for tests.
   */
  exportText?: (standard: string) => string;
  /**
   * Real RouterOS keeps established connections when their NAT rule is removed, until
   * `/ip firewall connection remove`. Default false: removing a rule also ends its relays.
   */
  conntrackOutlivesRules?: boolean;
  /**
   * The router's public (WAN) address. A dst-nat rule without `dst-address=` matches every
   * address of a real router, so the simulator then relays the port on this address too: a rule
   * not pinned to the tunnel is visible from "the internet" in tests.
   */
  wanAddress?: string;
  /**
   * An adopted router's script interpreter (docs/routeros.md "Simulator"): a command the agent's
   * fixed command forms do not cover (a fleet change's script, its backup and guard) runs here.
   */
  script?: (text: string) => Promise<string>;
  /** False while the router reboots or has lost its tunnel: connections and commands are dropped. */
  reachable?: () => boolean;
}

export interface RouterOsSshServer {
  port: number;
  /** `SHA256:<base64>` like OpenSSH prints it. */
  hostKeyFingerprint: string;
  rules(): NatRule[];
  /** Number of open relayed TCP connections. */
  connections(): number;
  /** Every command line received (exec or shell), accepted or not, in order. */
  commands(): string[];
  /** Successful SSH logins so far, to check that clients reuse their session. */
  logins(): number;
  /** The router's local users (temporary access users among them), passwords included. */
  users(): SimUser[];
  /** The router's local groups with their policies (built-in ones included). */
  groups(): Array<{ name: string; policy: string[] }>;
  /** Names of the scheduler entries. */
  schedulerEntries(): string[];
  /** Runs every scheduler entry's script now, as the router's clock would when they come due. */
  fireSchedulers(): void;
  close(): Promise<void>;
}

const PROMPT = "[admin@Sim] > ";

/** What offboarding removes from a simulated device; answers the command's output ("" or an error line). */
export interface ConfigurationTables {
  remove(menu: ConfigMenu, target: Target): string;
  /** The settings a change script set, as `/export terse` writes them (none at their defaults). */
  exportLines?(): string[];
}

function parseKeyOrThrow(key: string | Buffer, what: string): ParsedKey {
  const parsed = utils.parseKey(key);
  if (parsed instanceof Error) throw new Error(`${what}: ${parsed.message}`);
  return parsed;
}

/**
 * The router's command line: every line received, the configuration it changes (NAT rules, users,
 * the adopted device's tables) and `/export terse`. RouterOS applies changes one at a time; the
 * queue also keeps concurrent adds for the same port from racing to bind it.
 */
class RouterOsCommandLine {
  readonly received: string[] = [];
  #queue: Promise<unknown> = Promise.resolve();

  readonly #opts: RouterOsSshServerOptions;
  readonly #nat: RouterOsNatTable;
  readonly #users: RouterOsUsers;

  constructor(opts: RouterOsSshServerOptions, nat: RouterOsNatTable, users: RouterOsUsers) {
    this.#opts = opts;
    this.#nat = nat;
    this.#users = users;
  }

  /** `user`: the password user of the session (temporary access); undefined for the agent's key login. */
  run(line: string, user?: string): Promise<string> {
    const result = this.#queue
      .then(() => this.#execute(line, user))
      .catch((err: unknown) => `failure: simulator error: ${err}`);
    this.#queue = result;
    return result;
  }

  async #execute(line: string, user?: string): Promise<string> {
    const [opts, nat, users] = [this.#opts, this.#nat, this.#users];
    this.received.push(line);
    if (opts.commandDelayMs) await sleep(opts.commandDelayMs);
    // A script of several lines (a fleet change's steps) is the interpreter's, whatever it starts with.
    if (opts.script && line.includes("\n")) return this.#script(line, user);
    if (line.trim() === "/export terse") {
      const standard = this.#exportTerse();
      return opts.exportText ? opts.exportText(standard) : standard;
    }
    if (RouterOsUsers.handles(line)) {
      const out = users.execute(line, user);
      if (out !== "" || !opts.configuration) return out;
      // An adopted device's own users, groups and scheduler entries (what its adoption script
      // created) live in its configuration tables: a removal reaches them as well as the
      // temporary ones above, as on a router that has one table per menu (offboarding).
      const parsed = parseRouterOsCommand(line);
      return parsed.ok && parsed.command.kind === "config-remove"
        ? opts.configuration.remove(parsed.command.menu, parsed.command.target)
        : out;
    }
    const parsed = parseRouterOsCommand(line);
    if (!parsed.ok && opts.script) return this.#script(line, user);
    if (!parsed.ok) return parsed.error;
    const cmd = parsed.command;
    if (user !== undefined && cmd.kind !== "nat-print" && !users.policyOf(user).includes("write")) {
      return "failure: not enough permissions (9)";
    }
    switch (cmd.kind) {
      case "nat-add":
        return nat.add(cmd.args);
      case "nat-remove":
        return nat.remove(cmd.target);
      case "nat-print":
        return cmd.json ? nat.printJson(cmd.where) : nat.print(cmd.terse, cmd.where);
      case "connection-remove":
        return nat.dropConnections(cmd.target);
      case "config-remove":
        return opts.configuration ? opts.configuration.remove(cmd.menu, cmd.target) : "";
    }
  }

  #script(text: string, user: string | undefined): Promise<string> {
    if (user !== undefined && !this.#users.policyOf(user).includes("write")) {
      return Promise.resolve("failure: not enough permissions (9)");
    }
    return this.#opts.script?.(text) ?? Promise.resolve("");
  }

  /**
   * `/export terse` as RouterOS writes it: a dated first comment line (different on every read),
   * then one section per configured menu. Sensitive values are never part of it.
   */
  #exportTerse(): string {
    const stamp = new Date().toISOString().slice(0, 19).replace("T", " ");
    return [
      `# ${stamp} by RouterOS 7.16.2`,
      "# software id = SIM0-0000",
      "#",
      ...this.#nat.exportLines(),
      ...this.#users.exportLines(),
      ...(this.#opts.configuration?.exportLines?.() ?? []),
      "/system identity",
      "set name=Sim",
    ].join("\r\n");
  }
}

/** An interactive shell: echo, backspace, a prompt after each answer, `/quit`. */
function serveShell(stream: ServerChannel, run: (line: string) => Promise<string>): void {
  let buffer = "";
  stream.on("error", () => undefined);
  stream.write(`\r\n${PROMPT}`);
  stream.on("data", (data: Buffer) => {
    for (const ch of data.toString("utf8")) {
      if (ch === "\r" || ch === "\n") {
        const line = buffer.trim();
        buffer = "";
        if (line === "/quit" || line === "quit") {
          stream.write("\r\ninterrupted\r\n");
          stream.exit(0);
          stream.end();
          return;
        }
        stream.write("\r\n");
        void (line === "" ? Promise.resolve("") : run(line)).then((out) => {
          stream.write(out ? `${out}\r\n${PROMPT}` : PROMPT);
        });
      } else if (ch === "\x7f" || ch === "\b") {
        if (buffer.length > 0) {
          buffer = buffer.slice(0, -1);
          stream.write("\b \b");
        }
      } else {
        buffer += ch;
        stream.write(ch);
      }
    }
  });
}

/**
 * Who may log in: a local user with a password (temporary access) from an address it allows, or a
 * correctly signed key that `authorize` accepts (an adopted router) or that is among
 * `authorizedKeys` under `username`. Returns the password user's name, "" for a key login, or
 * undefined for a refusal.
 */
function loginDecider(opts: RouterOsSshServerOptions, users: RouterOsUsers) {
  const allowed = (opts.authorizedKeys ?? []).map((k) => parseKeyOrThrow(k, "authorizedKeys"));
  const parsedKey = (data: Buffer): ParsedKey | undefined => {
    const parsed = utils.parseKey(data);
    return parsed instanceof Error ? undefined : parsed;
  };
  // The wire blob embeds the key type, so comparing blobs compares type and key material.
  const acceptedKey = (data: Buffer): ParsedKey | undefined => {
    if (allowed.length === 0) return parsedKey(data);
    return allowed.find((k) => {
      const pub = k.getPublicSSH();
      return pub.length === data.length && timingSafeEqual(pub, data);
    });
  };
  return (ctx: AuthContext, ip: string): string | undefined => {
    if (ctx.method === "password")
      return users.passwordLogin(ctx.username, ctx.password, ip) ? ctx.username : undefined;
    if (ctx.method !== "publickey") return undefined;
    if (opts.authorize) {
      if (!opts.authorize(ctx.username, ctx.key.data, ip)) return undefined;
    } else if (opts.username !== undefined && ctx.username !== opts.username) {
      return undefined;
    }
    const key = opts.authorize ? parsedKey(ctx.key.data) : acceptedKey(ctx.key.data);
    if (!key) return undefined;
    // Without a signature the client only asks whether this key would do; ssh2 then expects a signed retry.
    if (ctx.signature && (!ctx.blob || key.verify(ctx.blob, ctx.signature, ctx.hashAlgo) !== true)) return undefined;
    return "";
  };
}

export async function startRouterOsSshServer(opts: RouterOsSshServerOptions): Promise<RouterOsSshServer> {
  const hostKey = opts.hostKey ?? generateEd25519KeyPair().private;
  const hostPublic = parseKeyOrThrow(hostKey, "hostKey").getPublicSSH();
  const nat = new RouterOsNatTable(opts.host, opts.lan, opts.conntrackOutlivesRules ?? false, opts.wanAddress);
  const sessions = new Set<Connection>();
  /** Sessions of users who logged in with a password (temporary access), by user name. */
  const passwordSessions = new Map<Connection, string>();
  const users = new RouterOsUsers((username) => {
    let n = 0;
    for (const [client, name] of passwordSessions) {
      if (name !== username) continue;
      client.end();
      n++;
    }
    return n;
  });
  const commandLine = new RouterOsCommandLine(opts, nat, users);
  const decideLogin = loginDecider(opts, users);
  let logins = 0;

  const server = new Server({ hostKeys: [hostKey] }, (client, info) => {
    if (opts.reachable && !opts.reachable()) {
      client.end();
      return;
    }
    sessions.add(client);
    // Exists at runtime (ssh2 server.js) but is missing from @types/ssh2; without it every reply waits on delayed ACK.
    (client as Connection & { setNoDelay(noDelay: boolean): void }).setNoDelay(true);
    client.on("close", () => {
      sessions.delete(client);
      passwordSessions.delete(client);
    });
    client.on("error", () => client.end());
    client.on("authentication", (ctx) => {
      const user = decideLogin(ctx, info.ip);
      if (user === undefined) return ctx.reject(ctx.method === "publickey" ? ["publickey"] : ["publickey", "password"]);
      if (user !== "") passwordSessions.set(client, user);
      ctx.accept();
    });
    client.on("ready", () => {
      logins++;
      const run = (line: string) => commandLine.run(line, passwordSessions.get(client));
      client.on("session", (acceptSession) => {
        const session = acceptSession();
        session.on("pty", (accept) => accept());
        session.on("exec", (accept, _reject, info) => {
          const stream = accept();
          stream.on("error", () => undefined);
          if (opts.reachable && !opts.reachable()) {
            client.end();
            return;
          }
          void run(info.command).then((out) => {
            if (out) stream.write(`${out}\r\n`);
            // RouterOS signals command errors only in-band, so the exit status is always 0.
            stream.exit(0);
            stream.end();
          });
        });
        session.on("shell", (accept) => serveShell(accept(), run));
      });
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, opts.host, () => {
      server.off("error", reject);
      resolve();
    });
  });

  return {
    port: (server.address() as AddressInfo).port,
    hostKeyFingerprint: `SHA256:${createHash("sha256").update(hostPublic).digest("base64").replace(/=+$/, "")}`,
    rules: () => nat.rules(),
    connections: () => nat.connections(),
    commands: () => [...commandLine.received],
    logins: () => logins,
    users: () => users.users(),
    groups: () => users.groups(),
    schedulerEntries: () => users.schedulerEntries(),
    fireSchedulers: () => users.fireAll(),
    async close() {
      users.close();
      for (const client of sessions) client.end();
      await Promise.all([nat.close(), new Promise((resolve) => server.close(resolve))]);
    },
  };
}
