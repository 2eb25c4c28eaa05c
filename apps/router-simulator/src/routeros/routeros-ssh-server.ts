import { createHash, timingSafeEqual } from "node:crypto";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import type { Connection, ParsedKey, ServerChannel } from "ssh2";
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
}

function parseKeyOrThrow(key: string | Buffer, what: string): ParsedKey {
  const parsed = utils.parseKey(key);
  if (parsed instanceof Error) throw new Error(`${what}: ${parsed.message}`);
  return parsed;
}

export async function startRouterOsSshServer(opts: RouterOsSshServerOptions): Promise<RouterOsSshServer> {
  const hostKey = opts.hostKey ?? generateEd25519KeyPair().private;
  const hostPublic = parseKeyOrThrow(hostKey, "hostKey").getPublicSSH();
  const allowed = (opts.authorizedKeys ?? []).map((k) => parseKeyOrThrow(k, "authorizedKeys"));
  const nat = new RouterOsNatTable(opts.host, opts.lan, opts.conntrackOutlivesRules ?? false, opts.wanAddress);
  const received: string[] = [];
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
  let logins = 0;
  // RouterOS applies configuration changes one at a time; this also keeps concurrent adds
  // for the same port from racing to bind it.
  let queue: Promise<unknown> = Promise.resolve();

  /** `user`: the password user of the session (temporary access); undefined for the agent's key login. */
  async function execute(line: string, user?: string): Promise<string> {
    received.push(line);
    if (opts.commandDelayMs) await sleep(opts.commandDelayMs);
    if (line.trim() === "/export terse") return exportTerse();
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

  /**
   * `/export terse` as RouterOS writes it: a dated first comment line (different on every read),
   * then one section per configured menu. Sensitive values are never part of it.
   */
  function exportTerse(): string {
    const stamp = new Date().toISOString().slice(0, 19).replace("T", " ");
    return [
      `# ${stamp} by RouterOS 7.16.2`,
      "# software id = SIM0-0000",
      "#",
      ...nat.exportLines(),
      ...users.exportLines(),
      "/system identity",
      "set name=Sim",
    ].join("\r\n");
  }

  function run(line: string, user?: string): Promise<string> {
    const result = queue.then(() => execute(line, user)).catch((err: unknown) => `failure: simulator error: ${err}`);
    queue = result;
    return result;
  }

  // The wire blob embeds the key type, so comparing blobs compares type and key material.
  const acceptedKey = (data: Buffer): ParsedKey | undefined => {
    if (allowed.length === 0) {
      const parsed = utils.parseKey(data);
      return parsed instanceof Error ? undefined : parsed;
    }
    return allowed.find((k) => {
      const pub = k.getPublicSSH();
      return pub.length === data.length && timingSafeEqual(pub, data);
    });
  };

  const parsedKey = (data: Buffer): ParsedKey | undefined => {
    const parsed = utils.parseKey(data);
    return parsed instanceof Error ? undefined : parsed;
  };

  function serveShell(stream: ServerChannel, user: string | undefined): void {
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
          void (line === "" ? Promise.resolve("") : run(line, user)).then((out) => {
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

  const server = new Server({ hostKeys: [hostKey] }, (client, info) => {
    sessions.add(client);
    // Exists at runtime (ssh2 server.js) but is missing from @types/ssh2; without it every reply waits on delayed ACK.
    (client as Connection & { setNoDelay(noDelay: boolean): void }).setNoDelay(true);
    client.on("close", () => {
      sessions.delete(client);
      passwordSessions.delete(client);
    });
    client.on("error", () => client.end());
    client.on("authentication", (ctx) => {
      if (ctx.method === "password") {
        // A local user with a password (temporary access), from an address its `address` allows.
        if (!users.passwordLogin(ctx.username, ctx.password, info.ip)) return ctx.reject(["publickey", "password"]);
        passwordSessions.set(client, ctx.username);
        return ctx.accept();
      }
      if (ctx.method !== "publickey") return ctx.reject(["publickey", "password"]);
      if (opts.authorize) {
        if (!opts.authorize(ctx.username, ctx.key.data, info.ip)) return ctx.reject(["publickey"]);
      } else if (opts.username !== undefined && ctx.username !== opts.username) {
        return ctx.reject(["publickey"]);
      }
      const key = opts.authorize ? parsedKey(ctx.key.data) : acceptedKey(ctx.key.data);
      if (!key) return ctx.reject(["publickey"]);
      // Without a signature the client only asks whether this key would do; ssh2 then expects a signed retry.
      if (ctx.signature && (!ctx.blob || key.verify(ctx.blob, ctx.signature, ctx.hashAlgo) !== true)) {
        return ctx.reject(["publickey"]);
      }
      ctx.accept();
    });
    client.on("ready", () => {
      logins++;
      client.on("session", (acceptSession) => {
        const session = acceptSession();
        session.on("pty", (accept) => accept());
        session.on("exec", (accept, _reject, info) => {
          const stream = accept();
          stream.on("error", () => undefined);
          void run(info.command, passwordSessions.get(client)).then((out) => {
            if (out) stream.write(`${out}\r\n`);
            // RouterOS signals command errors only in-band, so the exit status is always 0.
            stream.exit(0);
            stream.end();
          });
        });
        session.on("shell", (accept) => serveShell(accept(), passwordSessions.get(client)));
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
    commands: () => [...received],
    logins: () => logins,
    users: () => users.users(),
    schedulerEntries: () => users.schedulerEntries(),
    fireSchedulers: () => users.fireAll(),
    async close() {
      users.close();
      for (const client of sessions) client.end();
      await Promise.all([nat.close(), new Promise((resolve) => server.close(resolve))]);
    },
  };
}
