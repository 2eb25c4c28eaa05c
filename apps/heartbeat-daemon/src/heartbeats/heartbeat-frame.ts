import type { HeartbeatWrite, TokenOwner } from "@fleet/db";
import {
  findDepthViolation,
  firstFrameIssue,
  JSON_DEPTH_MESSAGE,
  MAX_JSON_DEPTH,
  opensAtMost,
  readPlainHeartbeat,
  type THeartbeatFrame,
  ZHeartbeatFrame,
} from "@fleet/shared";

/**
 * `json`: not JSON at all (HTTP 400); `schema`: JSON but not a heartbeat (HTTP 422). `errors` names the
 * refused field (`{"uptime": ["must be ..."]}`) when there is one.
 */
export type FrameRefusal = {
  ok: false;
  kind: "json" | "schema";
  message: string;
  errors?: Record<string, string[]>;
};
export type FrameResult = { ok: true; frame: THeartbeatFrame } | FrameRefusal;

/**
 * The one parser of both transports: text of one frame (or HTTP body) -> a heartbeat with plain values
 * (RouterOS forms converted, text rule checked), or the refusal to send back.
 */
export const parseHeartbeat = (text: string): FrameResult => {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { ok: false, kind: "json", message: "The frame is not valid JSON." };
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    return { ok: false, kind: "schema", message: 'Not a heartbeat: send a JSON object with "type": "heartbeat".' };
  }
  // docs/api.md "Errors": refused like a bad field before anything walks the value (a frame with
  // few brackets cannot nest too deep: no walk).
  const deep = opensAtMost(text, MAX_JSON_DEPTH) ? undefined : findDepthViolation(json);
  if (deep !== undefined) {
    const field = deep[0] ?? "body";
    return {
      ok: false,
      kind: "schema",
      message: `Not a valid heartbeat: ${field} ${JSON_DEPTH_MESSAGE}.`,
      errors: { [field]: [JSON_DEPTH_MESSAGE] },
    };
  }
  const plain = readPlainHeartbeat(json as Record<string, unknown>);
  if (plain) return { ok: true, frame: plain };
  const result = ZHeartbeatFrame.safeParse(json);
  if (!result.success) {
    const { field, issue, message } = firstFrameIssue(result.error);
    return field === undefined
      ? { ok: false, kind: "schema", message }
      : { ok: false, kind: "schema", message, errors: { [field]: [issue] } };
  }
  return { ok: true, frame: result.data };
};

/** A validated frame as the write the batcher stores. */
export const toWrite = (
  owner: TokenOwner,
  frame: THeartbeatFrame,
  seenAt: Date,
  peer: string | null,
): HeartbeatWrite => ({
  routerId: owner.routerId,
  tokenHash: owner.tokenHash,
  seenAt,
  peer,
  identity: frame.identity,
  serialNumber: frame.serial_number,
  softwareVersion: frame.software_version,
  softwareId: frame.software_id,
  model: frame.model,
  boardName: frame.board_name,
  hardwareboard: frame.hardwareboard,
  uptimeSeconds: frame.uptime,
  metadata: frame.metadata,
});

/** `::ffff:127.0.0.1` -> `127.0.0.1`: routers are mostly IPv4, reached through dual-stack sockets. */
export const peerAddress = (address: string | undefined): string | null => {
  if (!address) return null;
  return address.startsWith("::ffff:") && address.includes(".") ? address.slice(7) : address;
};
