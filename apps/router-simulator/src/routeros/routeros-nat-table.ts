import net from "node:net";
import ipaddr from "ipaddr.js";
import type { Condition, Target } from "./routeros-cli-parser.ts";

export interface NatRule {
  /** RouterOS internal id, `*1`, `*2`, ... (hex like RouterOS). */
  id: string;
  disabled: boolean;
  /** Properties as given to `add`, e.g. `{ chain: "dstnat", "dst-port": "40001", comment: "..." }`. */
  props: Readonly<Record<string, string>>;
}

export type LanResolver = (dstAddress: string, dstPort: number) => { host: string; port: number };

interface Relay {
  ruleId: string;
  dstAddress: string;
  srcAddress: string;
  client: net.Socket;
  upstream: net.Socket;
}

const PRINT_ORDER = [
  "chain",
  "action",
  "to-addresses",
  "to-ports",
  "protocol",
  "src-address",
  "dst-address",
  "in-interface",
  "out-interface",
  "src-port",
  "dst-port",
  "log",
  "log-prefix",
  "comment",
];

const ACTIONS = new Set([
  "accept",
  "dst-nat",
  "src-nat",
  "masquerade",
  "netmap",
  "redirect",
  "return",
  "passthrough",
  "jump",
  "log",
]);

function quote(value: string): string {
  if (value !== "" && !/[\s"\\;$[\]{}=]/.test(value)) return value;
  return `"${value.replace(/[\\"$]/g, (c) => `\\${c}`)}"`;
}

function isIpv4(value: string): boolean {
  return ipaddr.IPv4.isValidFourPartDecimal(value);
}

function isIpv4OrCidr(value: string): boolean {
  if (isIpv4(value)) return true;
  try {
    return ipaddr.IPv4.parseCIDR(value)[0].toString() === value.split("/")[0];
  } catch {
    return false;
  }
}

function addressMatches(address: string, spec: string): boolean {
  try {
    const ip = ipaddr.process(address);
    if (ip.kind() !== "ipv4") return false;
    return spec.includes("/") ? ip.match(ipaddr.IPv4.parseCIDR(spec)) : ip.toString() === spec;
  } catch {
    return false;
  }
}

/** `failure:` text for a bad `add` argument, like RouterOS, or undefined when the value is fine. */
function checkValue(key: string, value: string): string | undefined {
  switch (key) {
    case "dst-port":
    case "to-ports":
    case "src-port": {
      if (!/^\d+$/.test(value)) return `value of ${key} must be number`;
      return Number(value) > 65535 ? `value of ${key} out of range (0..65535)` : undefined;
    }
    case "to-addresses":
      return isIpv4(value) ? undefined : `value of ${key} must be ip address`;
    case "src-address":
    case "dst-address":
      return isIpv4OrCidr(value) ? undefined : `value of ${key} must be ip address or ip prefix`;
    case "protocol":
      return /^(?:tcp|udp|icmp|\d{1,3})$/.test(value) ? undefined : `input does not match any value of protocol`;
    case "action":
      return ACTIONS.has(value) ? undefined : `input does not match any value of action`;
    case "disabled":
    case "log":
      return /^(?:yes|no|true|false)$/.test(value) ? undefined : `value of ${key} must be yes or no`;
    default:
      return undefined;
  }
}

function matches(props: Record<string, string>, conds: Condition[]): boolean {
  return conds.every((c) => {
    const actual = props[c.key] ?? "";
    return c.op === "=" ? actual === c.value : new RegExp(c.value).test(actual);
  });
}

/** The fields `print as-value` reports for every rule, with RouterOS's defaults. */
const AS_VALUE_DEFAULTS = { bytes: 0, packets: 0, dynamic: false, invalid: false, log: false, "log-prefix": "" };

export class RouterOsNatTable {
  readonly #host: string;
  readonly #wan: string | undefined;
  readonly #lan: LanResolver;
  readonly #conntrackOutlivesRules: boolean;
  readonly #rules: NatRule[] = [];
  /** Keyed by `address:port`: the tunnel address and, for rules not pinned to it, the WAN address. */
  readonly #listeners = new Map<string, net.Server>();
  readonly #relays = new Set<Relay>();
  #nextId = 1;

  constructor(host: string, lan: LanResolver, conntrackOutlivesRules: boolean, wanAddress?: string) {
    this.#host = host;
    this.#wan = wanAddress;
    this.#lan = lan;
    this.#conntrackOutlivesRules = conntrackOutlivesRules;
  }

  rules(): NatRule[] {
    return this.#rules.map((r) => ({ ...r, props: { ...r.props } }));
  }

  connections(): number {
    return this.#relays.size;
  }

  /** Returns the RouterOS answer text (empty on success). */
  async add(args: Array<[string, string]>): Promise<string> {
    const props: Record<string, string> = {};
    for (const [key, value] of args) {
      const problem = checkValue(key, value);
      if (problem) return `failure: ${problem}`;
      props[key] = value;
    }
    if (props.chain === undefined) return "failure: chain not specified";
    const rule: NatRule = {
      id: `*${(this.#nextId++).toString(16).toUpperCase()}`,
      disabled: /^(?:yes|true)$/.test(props.disabled ?? ""),
      props,
    };
    const port = this.#relayPort(rule);
    for (const host of port === undefined ? [] : this.#relayHosts(rule)) {
      if (port === undefined || this.#listeners.has(`${host}:${port}`)) continue;
      try {
        await this.#listen(host, port);
      } catch (err) {
        return `failure: could not listen on ${host}:${port}: ${(err as NodeJS.ErrnoException).code ?? err}`;
      }
    }
    this.#rules.push(rule);
    return "";
  }

  remove(target: Target): string {
    const doomed = this.#select(target);
    if (typeof doomed === "string") return doomed;
    const ids = new Set(doomed.map((r) => r.id));
    for (let i = this.#rules.length - 1; i >= 0; i--) {
      if (ids.has(this.#rules[i]?.id ?? "")) this.#rules.splice(i, 1);
    }
    if (!this.#conntrackOutlivesRules) {
      for (const relay of this.#relays) if (ids.has(relay.ruleId)) this.#end(relay);
    }
    const stillNeeded = new Set(
      this.#rules.flatMap((r) => {
        const port = this.#relayPort(r);
        return port === undefined ? [] : this.#relayHosts(r).map((host) => `${host}:${port}`);
      }),
    );
    for (const [endpoint, server] of this.#listeners) {
      if (stillNeeded.has(endpoint)) continue;
      // close() stops accepting at once; its callback would wait for surviving relays, so don't await it.
      server.close();
      this.#listeners.delete(endpoint);
    }
    return "";
  }

  print(terse: boolean, where: Condition[]): string {
    const lines = terse ? [] : ["Flags: X - disabled, I - invalid; D - dynamic "];
    for (const [index, rule] of this.#rules.entries()) {
      let hit: boolean;
      try {
        hit = matches({ ...rule.props, ".id": rule.id }, where);
      } catch {
        return "failure: invalid regular expression";
      }
      if (!hit) continue;
      const keys = [
        ...PRINT_ORDER,
        ...Object.keys(rule.props).filter((k) => !PRINT_ORDER.includes(k) && k !== "disabled"),
      ];
      const shown: Record<string, string> = { log: "no", "log-prefix": "", ...rule.props };
      const fields = keys.flatMap((k) => (shown[k] === undefined ? [] : [`${k}=${quote(shown[k])}`]));
      lines.push(`${String(index).padStart(2)} ${(rule.disabled ? "X" : "").padEnd(2)} ${fields.join(" ")}`);
    }
    return lines.join("\r\n");
  }

  /** The table's part of `/export terse`: one `add` line per rule, in order, defaults left out. */
  exportLines(): string[] {
    if (this.#rules.length === 0) return [];
    const lines = ["/ip firewall nat"];
    for (const rule of this.#rules) {
      const fields = Object.keys(rule.props)
        .filter((k) => k !== "disabled")
        .sort()
        .map((k) => `${k}=${quote(rule.props[k] ?? "")}`);
      lines.push(`add ${fields.join(" ")}${rule.disabled ? " disabled=yes" : ""}`);
    }
    return lines;
  }

  /** `:serialize to=json` of `print as-value where ...`, as RouterOS 7.13+ writes it. */
  printJson(where: Condition[]): string {
    const out: Array<Record<string, unknown>> = [];
    for (const rule of this.#rules) {
      let hit: boolean;
      try {
        hit = matches({ ...rule.props, ".id": rule.id }, where);
      } catch {
        return "failure: invalid regular expression";
      }
      if (!hit) continue;
      const { disabled: _disabled, log, ...props } = rule.props;
      out.push({
        ".id": rule.id,
        ...AS_VALUE_DEFAULTS,
        ...props,
        ...(log === undefined ? {} : { log: /^(?:yes|true)$/.test(log) }),
        disabled: rule.disabled,
      });
    }
    return JSON.stringify(out);
  }

  dropConnections(target: Target): string {
    if ("ids" in target) return "no such item";
    try {
      for (const relay of this.#relays) {
        if (
          matches({ "dst-address": relay.dstAddress, "src-address": relay.srcAddress, protocol: "tcp" }, target.find)
        ) {
          this.#end(relay);
        }
      }
    } catch {
      return "failure: invalid regular expression";
    }
    return "";
  }

  async close(): Promise<void> {
    for (const relay of this.#relays) this.#end(relay);
    const servers = [...this.#listeners.values()];
    this.#listeners.clear();
    await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  }

  #select(target: Target): NatRule[] | string {
    if ("ids" in target) {
      const found = target.ids.map((id) => this.#rules.find((r) => r.id === id));
      return found.every((r) => r !== undefined) ? (found as NatRule[]) : "no such item";
    }
    try {
      return this.#rules.filter((r) => matches({ ...r.props, ".id": r.id }, target.find));
    } catch {
      return "failure: invalid regular expression";
    }
  }

  /** The port a rule diverts, if it is one the simulator relays. */
  #relayPort(rule: NatRule): number | undefined {
    const p = rule.props;
    if (rule.disabled || p.chain !== "dstnat" || p.action !== "dst-nat" || p.protocol !== "tcp") return undefined;
    if (p["dst-port"] === undefined || p["to-addresses"] === undefined) return undefined;
    const port = Number(p["dst-port"]);
    return port >= 1 ? port : undefined; // port 0 would make listen() pick a random port
  }

  /**
   * The router's addresses a rule matches, as `dst-address=` decides on RouterOS: only those it
   * names, every address (tunnel and WAN) when it names none.
   */
  #relayHosts(rule: NatRule): string[] {
    const spec = rule.props["dst-address"];
    const hosts = this.#wan === undefined ? [this.#host] : [this.#host, this.#wan];
    return spec === undefined ? hosts : hosts.filter((host) => addressMatches(host, spec));
  }

  async #listen(host: string, port: number): Promise<void> {
    // Half-open like real conntrack: a client that ends its sending side still gets the answer.
    const server = net.createServer({ allowHalfOpen: true }, (client) => this.#relay(host, port, client));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen({ host, port, exclusive: true }, () => {
        server.off("error", reject);
        resolve();
      });
    });
    this.#listeners.set(`${host}:${port}`, server);
  }

  #relay(host: string, port: number, client: net.Socket): void {
    // First matching rule wins, as in RouterOS chain evaluation: dst-address and src-address are
    // both enforced, so a rule not pinned to the tunnel or the entry point's source shows.
    const remote = client.remoteAddress ?? "";
    const rule = this.#rules.find(
      (r) =>
        this.#relayPort(r) === port &&
        this.#relayHosts(r).includes(host) &&
        (r.props["src-address"] === undefined || addressMatches(remote, r.props["src-address"])),
    );
    if (!rule) {
      client.destroy();
      return;
    }
    const to = this.#lan(rule.props["to-addresses"] ?? "", Number(rule.props["to-ports"] ?? port));
    const upstream = net.connect({ port: to.port, host: to.host, allowHalfOpen: true });
    const relay: Relay = {
      ruleId: rule.id,
      dstAddress: `${host}:${port}`,
      srcAddress: `${remote}:${client.remotePort ?? 0}`,
      client,
      upstream,
    };
    this.#relays.add(relay);
    const end = (): void => this.#end(relay);
    // A side that closed normally may leave the other still flushing its last bytes: end it
    // gracefully; errors and rule removal still destroy both at once.
    const closed = (): void => {
      if (client.closed && upstream.closed) this.#relays.delete(relay);
      else {
        client.end();
        upstream.end();
      }
    };
    client.on("error", end).on("close", closed);
    upstream.on("error", end).on("close", closed);
    client.pipe(upstream);
    upstream.pipe(client);
  }

  #end(relay: Relay): void {
    this.#relays.delete(relay);
    relay.client.destroy();
    relay.upstream.destroy();
  }
}
