import { createSecretKey } from "node:crypto";
import { AppError, ManualClock } from "@fleet/shared";
import { SignJWT } from "jose";
import { describe, expect, it } from "vitest";
import { type ApiKeyCheck, type AuthClaims, TokenVerifier } from "./token-verifier.ts";

const SECRET = "token-verifier-test-secret-0123456789abcdef";
const clock = () => new ManualClock(Date.UTC(2026, 10, 21, 12, 0, 0));

const sign = (clock: ManualClock, claims: Record<string, unknown>, expiresInS = 600) =>
  new SignJWT(claims)
    .setProtectedHeader({ alg: "HS256" })
    .setSubject("user-1")
    .setExpirationTime(Math.floor(clock.nowMs() / 1000) + expiresInS)
    .sign(createSecretKey(Buffer.from(SECRET)));

/** API keys as the verifier sees them: valid until revoked. */
class Keys implements ApiKeyCheck {
  readonly valid = new Set<string>();
  checks = 0;
  owns(bearer: string): boolean {
    return bearer.startsWith("fk_");
  }
  async verify(key: string): Promise<AuthClaims> {
    this.checks++;
    if (!this.valid.has(key)) throw new AppError("unauthenticated", "The API key is invalid or has been revoked.");
    return {
      userId: "user-1",
      organizationId: "org-1",
      teamId: undefined,
      scopes: new Set(["account:read"]),
      timezone: undefined,
      exp: Number.MAX_SAFE_INTEGER,
      credential: { type: "api_key", id: "key-1" },
      credentialId: "key:key-1",
    };
  }
}

describe("TokenVerifier's cache of verified tokens (by the Authorization header)", () => {
  it("answers a repeat from the cache until the token expires, then 401 'expired'", async () => {
    const time = clock();
    const verifier = new TokenVerifier({ secret: SECRET, clock: time });
    const header = `Bearer ${await sign(time, { id: "org-1", scope: "account:read" }, 60)}`;
    const first = await verifier.verify(header);
    expect(await verifier.verify(header)).toBe(first);
    time.advance(61_000);
    await expect(verifier.verify(header)).rejects.toMatchObject({ code: "unauthenticated", message: /expired/ });
    await expect(verifier.verify(header)).rejects.toMatchObject({ code: "unauthenticated", message: /expired/ });
  });

  it("never serves an API key from it: a revoked key is refused at once, however often it was accepted", async () => {
    const keys = new Keys();
    const verifier = new TokenVerifier({ secret: SECRET, clock: clock(), apiKeys: keys });
    const header = "Bearer fk_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG";
    keys.valid.add("fk_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG");
    for (let i = 0; i < 3; i++) expect((await verifier.verify(header)).credential.type).toBe("api_key");
    keys.valid.clear();
    await expect(verifier.verify(header)).rejects.toMatchObject({ code: "unauthenticated", message: /revoked/ });
    expect(keys.checks).toBe(4);
  });

  it("refuses what it refused before, header shape included, and caches no failure", async () => {
    const time = clock();
    const verifier = new TokenVerifier({ secret: SECRET, clock: time });
    const token = await sign(time, { id: "org-1" });
    await expect(verifier.verify(`Basic ${token}`)).rejects.toMatchObject({ code: "unauthenticated" });
    await expect(verifier.verify(undefined)).rejects.toMatchObject({ code: "unauthenticated" });
    const forged = `Bearer ${token.slice(0, -2)}xx`;
    for (let i = 0; i < 2; i++) await expect(verifier.verify(forged)).rejects.toMatchObject({ message: /invalid/ });
    // The same token in another accepted header form is verified (and cached) on its own.
    expect((await verifier.verify(`Bearer ${token}`)).userId).toBe("user-1");
    expect((await verifier.verify(`bearer ${token}`)).userId).toBe("user-1");
  });
});
