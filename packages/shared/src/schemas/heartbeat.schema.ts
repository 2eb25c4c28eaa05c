import ipaddr from "ipaddr.js";
import { z } from "zod";
import { isWireguardKey } from "../crypto/wireguard-keys.ts";
import { parseRouterOsBoolean, parseUptimeSeconds } from "../rules/routeros-duration.ts";
import { breaksTextRule, findTextRuleViolation, TEXT_RULE_MESSAGE, textRule } from "../rules/text-rules.ts";
import { type HealthIssue, readHealthInterfaces, readHealthPing, readHealthResources } from "./health.schema.ts";

/** docs/api.md "Routers and heartbeats": frames over this many bytes close the WebSocket with 1009. */
export const HEARTBEAT_MAX_FRAME_BYTES = 16 * 1024;

// Routers written as RouterOS scripts send empty values as null; null means "not reported".
// `:serialize to=json` turns numeric strings into floats (a serial "123456" arrives as 123456.000000,
// docs/routeros.md "Adoption"), so a finite number is taken as its text. Text follows the text rule.
const reported = (max: number) =>
  z.preprocess(
    (value) => (typeof value === "number" && Number.isFinite(value) ? String(value) : value),
    textRule(
      z.string({ error: "must be a string" }).max(max, { error: `must be at most ${max} characters` }),
    ).nullish(),
  );

/** Maximum lengths of the reported text fields (one home: the schema and `readPlainHeartbeat`). */
const REPORTED_MAX = {
  identity: 255,
  serial_number: 255,
  software_version: 100,
  software_id: 100,
  model: 100,
  board_name: 100,
} as const;

const UPTIME_MAX_SECONDS = 1e10;
const UPTIME_ERROR = "must be seconds or a RouterOS duration such as 1w2d03:04:05";

/** A health part (health.schema.ts) as a zod field: the plain reader decides, its issues become zod's. */
const healthPart = <T>(read: (value: unknown, issues: HealthIssue[]) => T) =>
  z
    .unknown()
    .transform((value, ctx): T => {
      const issues: HealthIssue[] = [];
      const out = read(value, issues);
      for (const issue of issues) ctx.addIssue({ code: "custom", message: issue.message, path: issue.path });
      return out;
    })
    .optional();

/**
 * One heartbeat (docs/api.md "Routers and heartbeats"), over WebSocket or `POST /v1/heartbeat`. Unknown top-level
 * keys are ignored, so newer router scripts keep working. Values may come as RouterOS writes them:
 * `uptime` as seconds (number or numeric string) or a duration, `hardwareboard` as a boolean or
 * "true"/"false"/"yes"/"no" (routeros-duration.ts); the output is always the plain type.
 */
export const ZHeartbeatFrame = z.object({
  type: z.literal("heartbeat", { error: 'must be "heartbeat"' }),
  identity: reported(REPORTED_MAX.identity),
  serial_number: reported(REPORTED_MAX.serial_number),
  software_version: reported(REPORTED_MAX.software_version),
  software_id: reported(REPORTED_MAX.software_id),
  model: reported(REPORTED_MAX.model),
  board_name: reported(REPORTED_MAX.board_name),
  hardwareboard: z
    .unknown()
    .transform((value, ctx): boolean | null | undefined => {
      if (value === undefined || value === null) return value;
      const parsed = parseRouterOsBoolean(value);
      if (parsed === null) ctx.addIssue({ code: "custom", message: 'must be true, false, "yes" or "no"' });
      return parsed;
    })
    .optional(),
  uptime: z
    .unknown()
    .transform((value, ctx): number | null | undefined => {
      if (value === undefined || value === null) return value;
      const seconds = parseUptimeSeconds(value);
      if (seconds === null) ctx.addIssue({ code: "custom", message: UPTIME_ERROR });
      else if (seconds > UPTIME_MAX_SECONDS) ctx.addIssue({ code: "custom", message: "is not a plausible uptime" });
      return seconds;
    })
    .optional(),
  // Never written: the address is the system's to assign (docs/api.md "Routers and heartbeats"). The daemon
  // compares it, normalized (`::ffff:10.0.0.1` -> `10.0.0.1`), with the assigned one.
  tunnel_ip: z
    .string({ error: "must be a string" })
    .max(45)
    .refine((value) => ipaddr.isValid(value), { error: "must be an IPv4 or IPv6 address" })
    .transform((value) => ipaddr.process(value).toString())
    .nullish(),
  // docs/routeros.md "The management tunnel": the router's WireGuard public key; the first one after
  // adoption binds it. Only the canonical base64 of 32 bytes is accepted.
  wireguard_public_key: z
    .string({ error: "must be a string" })
    .refine(isWireguardKey, { error: "must be a WireGuard public key (base64 of 32 bytes)" })
    .nullish(),
  metadata: z
    .record(z.string().max(64), z.unknown(), { error: "must be an object" })
    .superRefine((value, ctx) => {
      // Free-form: every key and string value anywhere inside follows the text rule.
      const path = findTextRuleViolation(value);
      if (path !== undefined) ctx.addIssue({ code: "custom", message: TEXT_RULE_MESSAGE, path: path.split(".") });
    })
    .nullish(),
  // docs/api.md "Health": resources, interfaces and a ping, values as RouterOS writes them.
  resources: healthPart(readHealthResources),
  interfaces: healthPart(readHealthInterfaces),
  ping: healthPart(readHealthPing),
});
/** The text fields, for the fast path below: the same limits as the schema's. */
const REPORTED_FIELDS = Object.entries(REPORTED_MAX) as Array<[keyof typeof REPORTED_MAX, number]>;

/**
 * The daemon's fast path: `ZHeartbeatFrame.parse` for a frame every field of which is plainly valid,
 * without zod's machinery (it was a third of the daemon's own work per heartbeat). Returns undefined
 * whenever a value is anything else (refused, a metadata object): the caller then asks zod, whose
 * answer, success or the error to send back, is the law. For every frame it accepts the result
 * equals zod's (heartbeat.schema.test.ts compares them on a generated corpus). `json` is a parsed
 * JSON object.
 */
export const readPlainHeartbeat = (json: Record<string, unknown>): THeartbeatFrame | undefined => {
  if (json.type !== "heartbeat") return undefined;
  const frame: THeartbeatFrame = { type: "heartbeat" };
  for (const [field, max] of REPORTED_FIELDS) {
    const value = json[field];
    if (value === undefined) continue;
    if (value === null) frame[field] = null;
    else if (typeof value === "string") {
      if (value.length > max || breaksTextRule(value)) return undefined;
      frame[field] = value;
    } else if (typeof value === "number" && Number.isFinite(value)) {
      const text = String(value);
      if (text.length > max) return undefined;
      frame[field] = text;
    } else return undefined;
  }
  const hardwareboard = json.hardwareboard;
  if (hardwareboard === null) frame.hardwareboard = null;
  else if (hardwareboard !== undefined) {
    const parsed = parseRouterOsBoolean(hardwareboard);
    if (parsed === null) return undefined;
    frame.hardwareboard = parsed;
  }
  const uptime = json.uptime;
  if (uptime === null) frame.uptime = null;
  else if (uptime !== undefined) {
    const seconds = parseUptimeSeconds(uptime);
    if (seconds === null || seconds > UPTIME_MAX_SECONDS) return undefined;
    frame.uptime = seconds;
  }
  const tunnelIp = json.tunnel_ip;
  if (tunnelIp === null) frame.tunnel_ip = null;
  else if (tunnelIp !== undefined) {
    if (typeof tunnelIp !== "string" || tunnelIp.length > 45 || !ipaddr.isValid(tunnelIp)) return undefined;
    frame.tunnel_ip = ipaddr.process(tunnelIp).toString();
  }
  const wireguardKey = json.wireguard_public_key;
  if (wireguardKey === null) frame.wireguard_public_key = null;
  else if (wireguardKey !== undefined) {
    if (!isWireguardKey(wireguardKey)) return undefined;
    frame.wireguard_public_key = wireguardKey;
  }
  const metadata = json.metadata;
  if (metadata === null) frame.metadata = null;
  else if (metadata !== undefined) return undefined;
  if (json.resources !== undefined || json.interfaces !== undefined || json.ping !== undefined) {
    // The same readers as the schema's: whatever they refuse, zod refuses with the same message.
    const issues: HealthIssue[] = [];
    if (json.resources !== undefined) frame.resources = readHealthResources(json.resources, issues);
    if (json.interfaces !== undefined) frame.interfaces = readHealthInterfaces(json.interfaces, issues);
    if (json.ping !== undefined) frame.ping = readHealthPing(json.ping, issues);
    if (issues.length > 0) return undefined;
  }
  return frame;
};

/** What a router may send (RouterOS forms included). */
export type THeartbeatFrameInput = z.input<typeof ZHeartbeatFrame>;
export type THeartbeatFrame = z.infer<typeof ZHeartbeatFrame>;

export const ZHeartbeatAck = z.object({ type: z.literal("ack"), interval_ms: z.number().int() });
export type THeartbeatAck = z.infer<typeof ZHeartbeatAck>;

/**
 * The error frame (WebSocket) and error body (HTTP). `errors` names the refused field the way docs/api.md
 * "Errors" names fields of a 422 (`{"uptime": ["must be ..."]}`); absent when no single field is at fault.
 */
export const ZHeartbeatError = z.object({
  type: z.literal("error"),
  message: z.string(),
  errors: z.record(z.string(), z.array(z.string())).optional(),
});
export type THeartbeatError = z.infer<typeof ZHeartbeatError>;

/** The first issue of a refused frame: its dotted field (as docs/api.md "Errors" names fields) and message. */
export const firstFrameIssue = (error: z.ZodError): { field: string | undefined; issue: string; message: string } => {
  const first = error.issues[0];
  if (!first) return { field: undefined, issue: "is not valid", message: "The frame is not a valid heartbeat." };
  const field = first.path.length > 0 ? first.path.map(String).join(".") : undefined;
  // "Not a valid heartbeat: uptime must be ...": short enough for a router's log.
  return {
    field,
    issue: first.message,
    message: `Not a valid heartbeat: ${field ? `${field} ` : ""}${first.message}.`,
  };
};
