import { IPV4_PATTERN } from "../rules/ipv4-rules.ts";
import { HEALTH_MAX_INTERFACES } from "../schemas/health.schema.ts";
import {
  command,
  divided,
  emptyArray,
  equal,
  findWhere,
  forEach,
  globalCommand,
  greater,
  ifThen,
  key,
  less,
  local,
  num,
  plus,
  type RosStatement,
  RouterOsScriptError,
  rootCommand,
  set,
  setAt,
  str,
  sub,
  times,
  tryDo,
  variable,
  word,
} from "./routeros-script.ts";

/**
 * The health part of the heartbeat (docs/routeros.md "Health"): `resources`, `interfaces` and
 * `ping` as CONTRACT section 20 names them, read with RouterOS 7 commands only:
 * - `/system resource get cpu-load|free-memory|total-memory|free-hdd-space|total-hdd-space`;
 * - `/system health`: on RouterOS 7 a list of items `name`/`value` (`temperature`, `cpu-temperature`,
 *   `voltage`; a CHR has none), read with `get [find where name=...] value`, each guarded;
 * - `/interface`: running interfaces of the watched types, at most HEALTH_SCRIPT_MAX_INTERFACES;
 * - `/ping address=... count=5 as-value`: one record per packet, `time` missing on a timeout.
 * Every read sits in `:do {} on-error={}`: a board without a value still sends the rest.
 */

/** `/interface` types reported: ethernet, wireless (legacy `wlan`, wifi package `wifi`), WireGuard, PPPoE, VLAN. */
export const HEALTH_INTERFACE_TYPES = ["ether", "wlan", "wifi", "wg", "pppoe-out", "pppoe-in", "vlan"] as const;
/** The heartbeat's limit (CONTRACT section 20): the script stops adding interfaces there. */
export const HEALTH_SCRIPT_MAX_INTERFACES = HEALTH_MAX_INTERFACES;
/** Packets of the heartbeat's ping. */
export const HEALTH_PING_COUNT = 5;

const HOST =
  /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

/** A ping target the script may carry: an IPv4 address or a host name, nothing RouterOS could read as more. */
export const isHealthPingTarget = (target: string): boolean => IPV4_PATTERN.test(target) || HOST.test(target);

const RESOURCE_FIELDS: ReadonlyArray<readonly [string, string]> = [
  ["cpu_load", "cpu-load"],
  ["memory_total", "total-memory"],
  ["memory_free", "free-memory"],
  ["disk_total", "total-hdd-space"],
  ["disk_free", "free-hdd-space"],
];

const resourceStatements = (): RosStatement[] => {
  const health = (name: string, field: string) =>
    tryDo([
      set("hres", sub(command("system health", "get", {}, [findWhere({ name: str(name) }), word("value")])), field),
    ]);
  return [
    local("hres", emptyArray()),
    ...RESOURCE_FIELDS.map(([field, property]) =>
      tryDo([set("hres", sub(command("system resource", "get", {}, [word(property)])), field)]),
    ),
    // Boards name their sensor `temperature` or only `cpu-temperature`; the first wins when both exist.
    health("cpu-temperature", "temperature"),
    health("temperature", "temperature"),
    health("voltage", "voltage"),
    set("hb", variable("hres"), "resources"),
  ];
};

const interfaceStatements = (): RosStatement[] => {
  const get = (property: string) => sub(command("interface", "get", {}, [variable("hif"), word(property)]));
  return [
    local("hifs", emptyArray()),
    tryDo([
      forEach("hkind", sub(globalCommand("toarray", {}, [str(HEALTH_INTERFACE_TYPES.join(","))])), [
        forEach("hif", sub(command("interface", "find", { type: variable("hkind") })), [
          ifThen(get("running"), [
            ifThen(less(sub(globalCommand("len", {}, [variable("hifs")])), num(HEALTH_SCRIPT_MAX_INTERFACES)), [
              local("hent", emptyArray()),
              set("hent", get("name"), "name"),
              set("hent", get("rx-byte"), "rx_bytes"),
              set("hent", get("tx-byte"), "tx_bytes"),
              set("hent", get("rx-error"), "rx_errors"),
              set("hent", get("tx-error"), "tx_errors"),
              set("hent", get("running"), "running"),
              setAt("hifs", sub(globalCommand("len", {}, [variable("hifs")])), variable("hent")),
            ]),
          ]),
        ]),
      ]),
    ]),
    ifThen(greater(sub(globalCommand("len", {}, [variable("hifs")])), num(0)), [
      set("hb", variable("hifs"), "interfaces"),
    ]),
  ];
};

const pingStatements = (target: string): RosStatement[] => {
  const time = key("hrec", "time");
  return [
    local("hrecs", emptyArray()),
    tryDo([
      set(
        "hrecs",
        sub(rootCommand("ping", { address: word(target), count: num(HEALTH_PING_COUNT) }, [word("as-value")])),
      ),
    ]),
    local("hsent", num(0)),
    local("hrcvd", num(0)),
    local("hsum", num(0)),
    local("hmax", num(0)),
    forEach("hrec", variable("hrecs"), [
      set("hsent", plus(variable("hsent"), num(1))),
      // A lost packet's record has no `time`; a time value times 1000 read as seconds is milliseconds.
      ifThen(equal(sub(globalCommand("typeof", {}, [time])), str("time")), [
        local("hms", sub(globalCommand("tonum", {}, [times(time, num(1000))]))),
        set("hrcvd", plus(variable("hrcvd"), num(1))),
        set("hsum", plus(variable("hsum"), variable("hms"))),
        ifThen(greater(variable("hms"), variable("hmax")), [set("hmax", variable("hms"))]),
      ]),
    ]),
    local("hping", emptyArray()),
    set("hping", str(target), "target"),
    set("hping", variable("hsent"), "sent"),
    set("hping", variable("hrcvd"), "received"),
    ifThen(greater(variable("hrcvd"), num(0)), [
      set("hping", divided(variable("hsum"), variable("hrcvd")), "rtt_avg_ms"),
      set("hping", variable("hmax"), "rtt_max_ms"),
    ]),
    set("hb", variable("hping"), "ping"),
  ];
};

/**
 * The statements that add `resources`, `interfaces` and (with a target) `ping` to the heartbeat
 * array `$hb` (docs/routeros.md "Health").
 */
export const healthHeartbeatStatements = (pingTarget: string | undefined): RosStatement[] => {
  if (pingTarget !== undefined && !isHealthPingTarget(pingTarget)) {
    throw new RouterOsScriptError("adoption script: HEALTH_PING_TARGET is not an IPv4 address or host name");
  }
  return [
    ...resourceStatements(),
    ...interfaceStatements(),
    ...(pingTarget === undefined ? [] : pingStatements(pingTarget)),
  ];
};
