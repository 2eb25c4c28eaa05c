import { ZHeartbeatError } from "@fleet/shared";

/**
 * The one place error frames and error bodies are made (docs/api.md "Routers and heartbeats"): WebSocket
 * error frames, HTTP error bodies and refused upgrades all carry this JSON. Validated against the
 * schema clients read, so the two cannot drift. Not on the success path: errors only.
 */
export const errorFrame = (message: string, errors?: Record<string, string[]>): string =>
  JSON.stringify(ZHeartbeatError.parse(errors ? { type: "error", message, errors } : { type: "error", message }));
