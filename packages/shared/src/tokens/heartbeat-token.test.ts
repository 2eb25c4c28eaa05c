import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { hashHeartbeatToken, heartbeatTokenLookupHash, isPlausibleHeartbeatToken } from "./heartbeat-token.ts";

describe("heartbeat token", () => {
  it("accepts hb_ + 43 base64url characters and looks it up by the SHA-256 hex that is stored", () => {
    const token = `hb_${"Ab0-_".repeat(8)}xyz`;
    const hash = hashHeartbeatToken(token);
    expect(hash).toBe(createHash("sha256").update(token).digest("hex"));
    expect(isPlausibleHeartbeatToken(token)).toBe(true);
    expect(heartbeatTokenLookupHash(token)).toBe(hash);
  });

  it.each([
    ["missing", undefined],
    ["empty", ""],
    ["15 characters", "a".repeat(15)],
    ["257 characters", "a".repeat(257)],
    ["a space", "hb_ with space inside"],
    ["a control character", "hb_abcdefghijklm\u0000"],
    ["non-ASCII", "hb_abcdefghijklmé"],
  ])("refuses a token with %s unhashed", (_name, token) => {
    expect(isPlausibleHeartbeatToken(token)).toBe(false);
    expect(heartbeatTokenLookupHash(token)).toBeNull();
  });

  it("accepts the edges: 16 and 256 characters, b64token characters", () => {
    expect(isPlausibleHeartbeatToken("a".repeat(16))).toBe(true);
    expect(isPlausibleHeartbeatToken("a".repeat(256))).toBe(true);
    expect(isPlausibleHeartbeatToken("hb_AZaz09-._~+/=")).toBe(true);
    expect(hashHeartbeatToken("a".repeat(16))).toHaveLength(64);
  });
});
