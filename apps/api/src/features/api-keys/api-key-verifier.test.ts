import type { ApiKeyRecord } from "@fleet/db";
import { AppError, ManualClock } from "@fleet/shared";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { type ApiKeyLookup, ApiKeyVerifier, hashApiKey } from "./api-key-verifier.ts";

/** A lookup that counts its queries: the database is the cost a flood of random keys would cause. */
class CountingLookup implements ApiKeyLookup {
  lookups = 0;
  async findByHash(): Promise<ApiKeyRecord | null> {
    this.lookups++;
    return null;
  }
  async touch(): Promise<void> {}
}

const randomKey = () => `fk_${Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url")}`;

describe('ApiKeyVerifier and unknown keys (docs/api.md "Rate limits")', () => {
  it("remembers an unknown key (one lookup for repeats) and looks up none while the address is over its limit", async () => {
    const keys = new CountingLookup();
    const verifier = new ApiKeyVerifier({ keys, logger: pino({ level: "silent" }) });
    const key = randomKey();
    for (let i = 0; i < 3; i++) await expect(verifier.verify(key)).rejects.toMatchObject({ code: "unauthenticated" });
    expect(keys.lookups).toBe(1);

    const over = new AppError("rate_limited", "over", { retryAfterSeconds: 30 });
    for (let i = 0; i < 1000; i++) {
      await expect(verifier.verify(randomKey(), { refuseLookup: () => over })).rejects.toBe(over);
    }
    expect(keys.lookups).toBe(1);
    // Known (negatively cached) keys are answered from memory even then.
    await expect(verifier.verify(key, { refuseLookup: () => over })).rejects.toMatchObject({ code: "unauthenticated" });
  });
});

/** One live key in the store; `revoked` makes the store answer none, as a deleted row does. */
class OneKey implements ApiKeyLookup {
  lookups = 0;
  revoked = false;
  readonly expiresAt: Date | null;
  constructor(expiresAt: Date | null = null) {
    this.expiresAt = expiresAt;
  }
  async findByHash(): Promise<ApiKeyRecord | null> {
    this.lookups++;
    if (this.revoked) return null;
    return {
      id: "key-1",
      organizationId: "org-1",
      teamId: null,
      createdBy: "user-1",
      name: "ci",
      prefix: "fk_abcd",
      scopes: ["account:read"],
      createdAt: new Date(0),
      expiresAt: this.expiresAt,
      lastUsedAt: null,
    };
  }
  async touch(): Promise<void> {}
}

describe('ApiKeyVerifier\'s cache (docs/api.md "Authentication")', () => {
  it("answers from its cache until cacheTtlMs, then looks the key up again, so a revocation elsewhere shows", async () => {
    const time = new ManualClock();
    const keys = new OneKey();
    const verifier = new ApiKeyVerifier({ keys, logger: pino({ level: "silent" }), clock: time, cacheTtlMs: 10_000 });
    const key = randomKey();
    const claims = await verifier.verify(key);
    expect(await verifier.verify(key)).toBe(claims);
    expect(keys.lookups).toBe(1);
    keys.revoked = true;
    time.advance(10_000);
    await expect(verifier.verify(key)).rejects.toMatchObject({ code: "unauthenticated", message: /revoked/ });
    expect(keys.lookups).toBe(2);
  });

  it("forgets a key revoked in this process at once, and answers no expired key", async () => {
    const time = new ManualClock();
    const keys = new OneKey(new Date(time.nowMs() + 5_000));
    const verifier = new ApiKeyVerifier({ keys, logger: pino({ level: "silent" }), clock: time });
    const key = randomKey();
    await verifier.verify(key);
    verifier.forget(hashApiKey(key));
    await verifier.verify(key);
    expect(keys.lookups).toBe(2);
    time.advance(5_000);
    await expect(verifier.verify(key)).rejects.toMatchObject({ code: "unauthenticated", message: /expired/ });
  });
});
