import { createHash } from "node:crypto";

/**
 * What the two apps must agree on about the heartbeat token of docs/api.md "Routers and heartbeats":
 * its prefix, its shape and its hash. The API makes the token (derived from the adoption token:
 * `heartbeatTokenFor` in its adoption-tokens.ts) and stores only the hash; the daemon refuses a token
 * of the wrong shape unhashed and looks the others up by hash (cached: transport/token-auth.ts).
 * It lives in shared because it is a property of the wire protocol, and it needs no database.
 */

export const HEARTBEAT_TOKEN_PREFIX = "hb_";
/** A token outside these lengths is refused without hashing (or a cache/database lookup). */
const MIN_TOKEN_LENGTH = 16;
const MAX_TOKEN_LENGTH = 256;

/** SHA-256 hex of the token: what `routers.heartbeat_token_hash` holds and what lookups compare. */
export const hashHeartbeatToken = (token: string): string => createHash("sha256").update(token).digest("hex");

// Token characters: base64url, plus the base64/RFC 6750 b64token ones older clients may send.
const isTokenChar = (code: number): boolean =>
  (code >= 0x30 && code <= 0x39) || // 0-9
  (code >= 0x41 && code <= 0x5a) || // A-Z
  (code >= 0x61 && code <= 0x7a) || // a-z
  code === 0x2d || // -
  code === 0x2e || // .
  code === 0x5f || // _
  code === 0x7e || // ~
  code === 0x2b || // +
  code === 0x2f || // /
  code === 0x3d; // =

/** Could this be a token at all? A loop, not a regex: it runs on every HTTP heartbeat. */
export const isPlausibleHeartbeatToken = (token: string | undefined): token is string => {
  if (token === undefined || token.length < MIN_TOKEN_LENGTH || token.length > MAX_TOKEN_LENGTH) return false;
  for (let i = 0; i < token.length; i++) if (!isTokenChar(token.charCodeAt(i))) return false;
  return true;
};

/** The check: the hash to look up for a presented token, or null when it cannot be one (refuse at once). */
export const heartbeatTokenLookupHash = (token: string | undefined): string | null =>
  isPlausibleHeartbeatToken(token) ? hashHeartbeatToken(token) : null;
