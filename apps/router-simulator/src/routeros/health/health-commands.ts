import type { SimulatedHealth } from "./simulated-health.ts";

/**
 * The simulated RouterOS commands that read health (docs/routeros.md "Health"): `/system health`
 * (a RouterOS 7 item list `name`/`value`/`type`), `/interface find|get` and `/ping ... as-value`.
 * Values are plain data here; the interpreter (routeros-device.ts) turns them into its own values.
 */

/** A value the interpreter understands: strings, numbers, booleans, lists of ids, item records. */
export type HealthValue =
  | string
  | number
  | boolean
  | { ids: string[] }
  | { seconds: number }
  | Array<Record<string, string | number | { seconds: number }>>
  | undefined;

export class HealthCommandError extends Error {}

export interface HealthCommandContext {
  health: SimulatedHealth;
  nowMs: number;
  bootedAtMs: number;
}

/** `find` conditions: `name=value` pairs (the `where` word is allowed and ignored). */
export type FindConditions = Array<[string, string]>;

const matches = (props: Record<string, string>, conditions: FindConditions) =>
  conditions.every(([k, v]) => props[k] === v);

const sensorId = (i: number) => `*S${i + 1}`;
const interfaceId = (i: number) => `*I${i + 1}`;

/** `/system health find ...` */
export const findSensors = (c: HealthCommandContext, conditions: FindConditions): { ids: string[] } => ({
  ids: c.health
    .sensors(c.nowMs)
    .map((sensor, i) => ({ id: sensorId(i), props: { name: sensor.name, value: sensor.value, type: sensor.type } }))
    .filter((item) => matches(item.props, conditions))
    .map((item) => item.id),
});

/** `/system health get <id|name> <property>` */
export const getSensor = (c: HealthCommandContext, target: string | string[], property: string): HealthValue => {
  const ids = Array.isArray(target) ? target : [target];
  const sensors = c.health.sensors(c.nowMs);
  const index = sensors.findIndex((s, i) => sensorId(i) === ids[0] || s.name === ids[0]);
  const sensor = sensors[index];
  if (!sensor || ids.length !== 1) throw new HealthCommandError("no such item");
  const props: Record<string, string> = { name: sensor.name, value: sensor.value, type: sensor.type };
  if (!(property in props)) throw new HealthCommandError(`input does not match any value of value-name: ${property}`);
  return props[property];
};

const interfaceProps = (c: HealthCommandContext) =>
  c.health.interfaces(c.nowMs, c.bootedAtMs).map((i, n) => ({
    id: interfaceId(n),
    text: { name: i.name, type: i.type, running: i.running ? "true" : "false" },
    values: {
      name: i.name,
      type: i.type,
      running: i.running,
      "rx-byte": i.rxByte,
      "tx-byte": i.txByte,
      "rx-error": i.rxError,
      "tx-error": i.txError,
    } as Record<string, string | number | boolean>,
  }));

/** `/interface find ...` */
export const findInterfaces = (c: HealthCommandContext, conditions: FindConditions): { ids: string[] } => ({
  ids: interfaceProps(c)
    .filter((i) => matches(i.text, conditions))
    .map((i) => i.id),
});

/** `/interface get <id|name> <property>` */
export const getInterface = (c: HealthCommandContext, target: string | string[], property: string): HealthValue => {
  const ids = Array.isArray(target) ? target : [target];
  const item = interfaceProps(c).find((i) => i.id === ids[0] || i.values.name === ids[0]);
  if (!item || ids.length !== 1) throw new HealthCommandError("no such item");
  if (!(property in item.values))
    throw new HealthCommandError(`input does not match any value of value-name: ${property}`);
  return item.values[property];
};

const PING_ARGS = new Set(["address", "count", "interval", "size", "src-address", "interface", "routing-table"]);

/**
 * `/ping address=A count=N as-value` (RouterOS 7): one record per packet, `host`, `seq`, `size`,
 * `ttl`, `time`; a lost packet's record has `status` "timeout" and no `time`. Without `as-value`
 * RouterOS prints a table and the value is nothing useful: refused here, the script never does it.
 */
export const ping = (c: HealthCommandContext, args: Map<string, string>, asValue: boolean): HealthValue => {
  for (const name of args.keys()) if (!PING_ARGS.has(name)) throw new HealthCommandError(`expected end of command`);
  const address = args.get("address") ?? "";
  if (!address) throw new HealthCommandError("failure: address is required");
  const count = Number(args.get("count") ?? "");
  if (!Number.isInteger(count) || count < 1 || count > 100)
    throw new HealthCommandError("count: only 1..100 simulated");
  if (!asValue) throw new HealthCommandError("only /ping ... as-value is simulated");
  type PingRecord = Record<string, string | number | { seconds: number }>;
  return c.health
    .ping(c.nowMs, count)
    .map(
      (seconds, seq): PingRecord =>
        seconds === undefined
          ? { host: address, seq, size: 56, status: "timeout" }
          : { host: address, seq, size: 56, ttl: 64, time: { seconds } },
    );
};
