import ipaddr from "ipaddr.js";
import { z } from "zod";

/** docs/api.md "Routers and heartbeats": frames over this many bytes close the WebSocket with 1009. */
export const HEARTBEAT_MAX_FRAME_BYTES = 16 * 1024;

// Routers written as RouterOS scripts send empty values as null; null means "not reported".
const reported = (max: number) =>
  z
    .string({ error: "must be a string" })
    .max(max, { error: `must be at most ${max} characters` })
    .nullish();

/**
 * One heartbeat (docs/api.md "Routers and heartbeats"), over WebSocket or `POST /v1/heartbeat`. Unknown top-level
 * keys are ignored, so newer router scripts keep working.
 */
export const ZHeartbeatFrame = z.object({
  type: z.literal("heartbeat", { error: 'must be "heartbeat"' }),
  identity: reported(255),
  serial_number: reported(255),
  software_version: reported(100),
  software_id: reported(100),
  model: reported(100),
  board_name: reported(100),
  hardwareboard: z.boolean({ error: "must be a boolean" }).nullish(),
  uptime: z
    .number({ error: "must be a number of seconds" })
    .nonnegative({ error: "must not be negative" })
    .max(1e10, { error: "is not a plausible uptime" })
    .nullish(),
  tunnel_ip: z
    .string({ error: "must be a string" })
    .max(45)
    .refine((value) => ipaddr.isValid(value), { error: "must be an IPv4 or IPv6 address" })
    .nullish(),
  metadata: z.record(z.string().max(64), z.unknown(), { error: "must be an object" }).nullish(),
});
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

/** "uptime: must be a number of seconds" for the first issue: short enough for a router's log. */
export const describeFrameIssues = (error: z.ZodError): string => {
  const issue = error.issues[0];
  if (!issue) return "The frame is not a valid heartbeat.";
  const path = issue.path.map(String).join(".");
  return `Not a valid heartbeat: ${path ? `${path} ` : ""}${issue.message}.`;
};
