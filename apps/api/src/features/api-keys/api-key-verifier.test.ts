import type { ApiKeyRecord } from "@fleet/db";
import { AppError } from "@fleet/shared";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { type ApiKeyLookup, ApiKeyVerifier } from "./api-key-verifier.ts";

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
