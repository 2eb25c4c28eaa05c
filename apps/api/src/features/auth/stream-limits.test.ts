import { describe, expect, it } from "vitest";
import { STREAMS_PER_CREDENTIAL, STREAMS_PER_ORGANIZATION, StreamLimits } from "./stream-limits.ts";
import type { AuthClaims } from "./token-verifier.ts";

const claims = (credentialId: string, organizationId: string): AuthClaims => ({
  userId: "u",
  organizationId,
  teamId: undefined,
  scopes: new Set(["routers:read"]),
  timezone: undefined,
  exp: 0,
  credential: { type: "api_key", id: credentialId },
  credentialId,
});

// docs/api.md "Rate limits": at most 20 open streams per credential and 200 per organization.
describe("StreamLimits", () => {
  it("holds 20 streams of a credential; the 21st is rate_limited with a retry time", () => {
    const limits = new StreamLimits();
    const auth = claims("key:a", "org-1");
    const releases = Array.from({ length: STREAMS_PER_CREDENTIAL }, () => limits.open(auth));
    expect(() => limits.open(auth)).toThrow(expect.objectContaining({ code: "rate_limited", retryAfterSeconds: 10 }));
    // Released twice, freed once.
    releases[0]?.();
    releases[0]?.();
    expect(limits.count(auth).credential).toBe(STREAMS_PER_CREDENTIAL - 1);
    limits.open(auth);
    expect(() => limits.open(auth)).toThrow(/20 open streams/);
  });

  it("holds 200 streams of an organization across credentials; the 201st is refused, other organizations go on", () => {
    const limits = new StreamLimits();
    for (let i = 0; i < STREAMS_PER_ORGANIZATION; i++) limits.open(claims(`key:${i % 10}`, "org-1"));
    expect(limits.count(claims("key:x", "org-1")).organization).toBe(200);
    expect(() => limits.open(claims("key:new", "org-1"))).toThrow(/200 open streams/);
    expect(() => limits.open(claims("key:new", "org-2"))).not.toThrow();
  });
});
