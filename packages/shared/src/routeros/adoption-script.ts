import { IPV4_CIDR_PATTERN } from "../rules/ipv4-rules.ts";
import {
  command,
  comment,
  emptyArray,
  fail,
  findWhere,
  globalCommand,
  ifThen,
  key,
  local,
  notEqual,
  type RosStatement,
  RouterOsScriptError,
  renderRouterOsScript,
  routerOsDuration,
  routerOsString,
  set,
  str,
  sub,
  bool,
  tryDo,
  variable,
  word,
} from "./routeros-script.ts";
import { healthHeartbeatStatements } from "./health-script.ts";
import {
  type AdoptionWireguard,
  removeWireguardStatements,
  wireguardAdoptionStatements,
  wireguardKeyHeartbeatStatements,
} from "./wireguard-script.ts";

/**
 * What the adoption script of one router is made of (docs/routeros.md "Adoption"). Everything here
 * ends up on the router; nothing secret but the router's own heartbeat token and the agent's
 * public key.
 */
export interface AdoptionScriptInput {
  routerId: string;
  /** The router's name in the inventory: user text, shown in the router's log only. */
  routerName: string;
  /** `HEARTBEAT_PUBLIC_URL` + `/v1/heartbeat`. */
  heartbeatUrl: string;
  heartbeatToken: string;
  /** `HEARTBEAT_INTERVAL_MS`: the scheduler's interval. */
  intervalMs: number;
  /** `TUNNEL_SSH_USER`. */
  sshUser: string;
  /** `TUNNEL_NETWORK`: the only addresses the user may log in from. */
  tunnelNetwork: string;
  /** The tunnel agent's OpenSSH public key (`ssh-ed25519 AAAA...`). */
  agentPublicKey: string;
  /** `TUNNEL_MODE=wireguard`: the script also builds the router's end of the tunnel. */
  wireguard?: AdoptionWireguard | undefined;
  /** `HEALTH_PING_TARGET`: where every heartbeat's 5-packet ping goes; none when unset (docs/routeros.md "Health"). */
  pingTarget?: string | undefined;
}

/** Names of what the script installs; running it again removes these first. */
export const ADOPTION_OBJECTS = {
  group: "fleet-mgmt",
  groupPolicy: "ssh,read,write,test",
  script: "fleet-heartbeat",
  scheduler: "fleet-heartbeat",
  /** Policy of the heartbeat script and its scheduler entry: what `/tool fetch` and the getters need. */
  scriptPolicy: "read,write,test",
  comment: "fleet adoption: do not edit, run the adoption command again instead",
} as const;

/** RouterOS user names the script may create: letters, digits, `.`, `_`, `-` (docs/operations.md "Configuration"). */
export const ROUTEROS_USER_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const HEARTBEAT_TOKEN = /^hb_[A-Za-z0-9_-]{20,200}$/;
const PUBLIC_KEY = /^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521)) [A-Za-z0-9+/]+={0,2}$/;
const IPV4_CIDR = IPV4_CIDR_PATTERN;

const checked = (ok: boolean, what: string): void => {
  if (!ok) throw new RouterOsScriptError(`adoption script: ${what}`);
};

const checkInput = (input: AdoptionScriptInput): void => {
  checked(HEARTBEAT_TOKEN.test(input.heartbeatToken), "the heartbeat token has an unexpected shape");
  checked(ROUTEROS_USER_NAME.test(input.sshUser), "TUNNEL_SSH_USER is not a RouterOS user name");
  checked(IPV4_CIDR.test(input.tunnelNetwork), "TUNNEL_NETWORK is not an IPv4 CIDR");
  checked(PUBLIC_KEY.test(input.agentPublicKey), "the agent's public key is not an OpenSSH public key line");
  checked(Number.isSafeInteger(input.intervalMs) && input.intervalMs > 0, "the heartbeat interval is not positive");
  let url: URL | undefined;
  try {
    url = new URL(input.heartbeatUrl);
  } catch {
    url = undefined;
  }
  checked(
    url !== undefined && (url.protocol === "http:" || url.protocol === "https:") && !url.username && !url.password,
    "the heartbeat URL is not an http(s) URL without credentials",
  );
};

/** `:error` text when device-mode forbids a feature the script needs. */
export const deviceModeMessage = (feature: "fetch" | "scheduler"): string =>
  `fleet adoption stopped: /system device-mode forbids ${feature}. Nothing was changed. Allow it with ` +
  `"/system device-mode update ${feature}=yes", then confirm within 5 minutes by pressing the reset or mode ` +
  "button on the router (a physical button press, or a power cycle, is needed), and run the adoption command again.";

/**
 * The heartbeat the scheduler sends: the docs/api.md "Routers and heartbeats" JSON built with
 * `:serialize to=json` (RouterOS 7.13+) and POSTed with `/tool fetch`
 * (https://help.mikrotik.com/docs/display/ROS/Fetch). A CHR has no RouterBOARD, no serial number
 * and no software-id: its license's system-id stands in for both.
 */
export const heartbeatScript = (
  input: Pick<AdoptionScriptInput, "heartbeatUrl" | "heartbeatToken" | "wireguard" | "pingTarget">,
): RosStatement[] => [
  comment('fleet heartbeat (docs/routeros.md "Adoption")'),
  local("hb", emptyArray()),
  set("hb", str("heartbeat"), "type"),
  set("hb", sub(command("system identity", "get", {}, [word("name")])), "identity"),
  set("hb", sub(command("system resource", "get", {}, [word("version")])), "software_version"),
  set("hb", sub(command("system resource", "get", {}, [word("board-name")])), "board_name"),
  set("hb", sub(globalCommand("tostr", {}, [sub(command("system resource", "get", {}, [word("uptime")]))])), "uptime"),
  local("rb", bool(false)),
  tryDo([set("rb", sub(command("system routerboard", "get", {}, [word("routerboard")])))]),
  set("hb", variable("rb"), "hardwareboard"),
  ifThen(
    variable("rb"),
    [
      set("hb", sub(command("system routerboard", "get", {}, [word("serial-number")])), "serial_number"),
      set("hb", sub(command("system routerboard", "get", {}, [word("model")])), "model"),
      tryDo([set("hb", sub(command("system license", "get", {}, [word("software-id")])), "software_id")]),
    ],
    [
      set("hb", sub(command("system resource", "get", {}, [word("board-name")])), "model"),
      tryDo([set("hb", sub(command("system license", "get", {}, [word("system-id")])), "software_id")]),
      set("hb", key("hb", "software_id"), "serial_number"),
    ],
  ),
  ...(input.wireguard ? wireguardKeyHeartbeatStatements() : []),
  ...healthHeartbeatStatements(input.pingTarget),
  tryDo(
    [
      command("tool", "fetch", {
        url: str(input.heartbeatUrl),
        "http-method": word("post"),
        "http-header-field": str(`Authorization: Bearer ${input.heartbeatToken},Content-Type: application/json`),
        "http-data": sub(globalCommand("serialize", { to: word("json"), value: variable("hb") })),
        output: word("none"),
      }),
    ],
    [globalCommand("log", {}, [word("warning"), str("fleet heartbeat failed; the scheduler tries again")])],
  ),
];

/**
 * The whole adoption script (docs/routeros.md "Adoption"): checks device-mode before changing
 * anything, removes what an earlier run installed, then creates the group, the user, its key, the
 * heartbeat script and its scheduler entry, and sends one heartbeat at once.
 * Users, groups and keys: https://help.mikrotik.com/docs/display/ROS/User; device-mode:
 * https://help.mikrotik.com/docs/x/gYCwBQ; scheduler: https://help.mikrotik.com/docs/display/ROS/Scheduler.
 */
export const adoptionScript = (input: AdoptionScriptInput): string => {
  checkInput(input);
  const o = ADOPTION_OBJECTS;
  const heartbeat = renderRouterOsScript(heartbeatScript(input));
  const deviceMode = (feature: "fetch" | "scheduler") =>
    ifThen(notEqual(sub(command("system device-mode", "get", {}, [word(feature)])), bool(true)), [
      fail(deviceModeMessage(feature)),
    ]);
  return renderRouterOsScript([
    comment('Fleet adoption script (docs/routeros.md "Adoption"). Safe to run again: it replaces what it installed.'),
    globalCommand("log", {}, [word("info"), str(`fleet adoption of router ${input.routerName} (${input.routerId})`)]),
    deviceMode("fetch"),
    deviceMode("scheduler"),
    command("system scheduler", "remove", {}, [findWhere({ name: str(o.scheduler) })]),
    command("system script", "remove", {}, [findWhere({ name: str(o.script) })]),
    command("user ssh-keys", "remove", {}, [findWhere({ user: str(input.sshUser) })]),
    command("user", "remove", {}, [findWhere({ name: str(input.sshUser) })]),
    command("user group", "remove", {}, [findWhere({ name: str(o.group) })]),
    command("user group", "add", { name: str(o.group), policy: str(o.groupPolicy), comment: str(o.comment) }),
    command("user", "add", {
      name: str(input.sshUser),
      group: str(o.group),
      address: str(input.tunnelNetwork),
      comment: str(o.comment),
    }),
    command("user ssh-keys", "add", { user: str(input.sshUser), key: str(input.agentPublicKey) }),
    command("system script", "add", {
      name: str(o.script),
      policy: str(o.scriptPolicy),
      source: str(heartbeat),
      comment: str(o.comment),
    }),
    command("system scheduler", "add", {
      name: str(o.scheduler),
      "start-time": word("startup"),
      interval: routerOsDuration(input.intervalMs),
      policy: str(o.scriptPolicy),
      "on-event": str(`/system script run ${o.script}`),
      comment: str(o.comment),
    }),
    ...(input.wireguard ? wireguardAdoptionStatements(input.wireguard) : []),
    command("system script", "run", {}, [str(o.script)]),
    globalCommand("log", {}, [word("info"), str("fleet adoption complete; heartbeats follow")]),
  ]);
};

/** The one line to paste into a RouterOS 7 terminal: fetch the script, import it, remove the file. */
export const adoptionCommand = (url: string): string => {
  const file = "fleet-adopt.rsc";
  return [
    `/tool fetch url=${routerOsString(url)} dst-path=${file}`,
    `/import file-name=${file}`,
    `/file remove ${file}`,
  ].join("; ");
};

/**
 * What the offboarding job sends to a removed router's device, one command per line, in this
 * order (docs/routeros.md "Offboarding"): everything adoption and the agent installed, i.e. the
 * tagged dst-nat rules of forwards, the heartbeat scheduler entry and script, the agent's key, its
 * user and group, then the tagged filter rules, the management tunnel's tagged route and address,
 * its hub peer and its WireGuard interface, last because removing them may end the session itself. Each `remove [find ...]` of
 * nothing is not an error on RouterOS, so a second run (a retried job) passes.
 */
export const offboardingCommands = (sshUser: string): string[] => {
  checked(ROUTEROS_USER_NAME.test(sshUser), "TUNNEL_SSH_USER is not a RouterOS user name");
  const o = ADOPTION_OBJECTS;
  const line = (statement: RosStatement) => renderRouterOsScript([statement]).trim();
  return [
    `/ip firewall nat remove [find where comment~"^${OFFBOARD_TAG_PATTERN.nat}"]`,
    line(command("system scheduler", "remove", {}, [findWhere({ name: str(o.scheduler) })])),
    line(command("system script", "remove", {}, [findWhere({ name: str(o.script) })])),
    line(command("user ssh-keys", "remove", {}, [findWhere({ user: str(sshUser) })])),
    line(command("user", "remove", {}, [findWhere({ name: str(sshUser) })])),
    line(command("user group", "remove", {}, [findWhere({ name: str(o.group) })])),
    `/ip firewall filter remove [find where comment~"^${OFFBOARD_TAG_PATTERN.filter}"]`,
    // The management tunnel's own route, address and hub peer (tagged as the adoption script
    // tags them), then its interface with the router's WireGuard key.
    ...removeWireguardStatements(true)
      .filter((statement) => !isFilterRemoval(statement))
      .map(line),
  ];
};

/** The tunnel's tagged filter rules: offboarding removes them (and older tags) by pattern instead. */
const isFilterRemoval = (statement: RosStatement): boolean =>
  statement.kind === "command" && statement.path.join(" ") === "ip firewall filter";

/** Comment prefixes of what offboarding removes by pattern: forwards' dst-nat rules, the tunnel's filter rules. */
export const OFFBOARD_TAG_PATTERN = { nat: "fleet-fwd:", filter: "fleet" } as const;
/** The management tunnel's interface on the router (CONTRACT section 13), removed by offboarding too. */
export const OFFBOARD_WIREGUARD_INTERFACE = "fleet-wg";
