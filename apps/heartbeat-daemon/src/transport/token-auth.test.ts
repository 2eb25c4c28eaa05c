import type { TokenOwner } from "@fleet/db";
import { describe, expect, it, vi } from "vitest";
import { bearerToken, hashHeartbeatToken as hashToken, ManualClock } from "@fleet/shared";
import { REFRESH_BATCH, TokenAuthenticator } from "./token-auth.ts";

/** A fake token store: counts its queries; `owners` is what the database holds now. */
const store = (owners: Map<string, TokenOwner>) => {
  const calls: string[][] = [];
  return {
    calls,
    lookup: {
      lookupTokens: async (hashes: readonly string[]) => {
        calls.push([...hashes]);
        return new Map(hashes.flatMap((h) => (owners.has(h) ? [[h, owners.get(h) as TokenOwner] as const] : [])));
      },
    },
  };
};

const token = (n: number) => `hb_token_number_${String(n).padStart(6, "0")}`;
/** Router r<n>, found by the hash of token(n). */
const ownerOf = (n: number): TokenOwner => ({
  routerId: `r${n}`,
  teamId: "t",
  tunnelIp: null,
  tokenHash: hashToken(token(n)),
});

/** Routers r<n> for `numbers`, and an authenticator that answers their stale owners (HTTP), on a settable clock. */
const staleAuthenticator = (numbers: readonly number[]) => {
  const owners = new Map(numbers.map((n) => [hashToken(token(n)), ownerOf(n)] as const));
  const s = store(owners);
  const clock = new ManualClock(0);
  const auth = new TokenAuthenticator({
    lookup: s.lookup,
    ttlMs: 1_000,
    staleMs: 10_000,
    refreshEveryMs: 0,
    clock,
  });
  return { owners, s, clock, auth };
};

describe("TokenAuthenticator", () => {
  it("merges concurrent lookups into one query and caches the answer", async () => {
    const owners = new Map([[hashToken(token(1)), ownerOf(1)]]);
    const s = store(owners);
    const auth = new TokenAuthenticator({ lookup: s.lookup, ttlMs: 1_000, clock: new ManualClock(0) });
    const results = await Promise.all([
      auth.authenticate(token(1)),
      auth.authenticate(token(1)),
      auth.authenticate(token(2)),
    ]);
    expect(results).toEqual([ownerOf(1), ownerOf(1), null]);
    expect(s.calls).toHaveLength(1);
    expect(s.calls[0]?.sort()).toEqual([hashToken(token(1)), hashToken(token(2))].sort());
    await auth.authenticate(token(1));
    await auth.authenticate(token(2));
    expect(s.calls).toHaveLength(1);
  });

  it("re-checks after the TTL, so a router deleted elsewhere is refused", async () => {
    const owners = new Map([[hashToken(token(1)), ownerOf(1)]]);
    const s = store(owners);
    const clock = new ManualClock(0);
    const auth = new TokenAuthenticator({ lookup: s.lookup, ttlMs: 1_000, clock });
    expect(await auth.authenticate(token(1))).not.toBeNull();
    owners.clear();
    clock.set(999);
    expect(await auth.authenticate(token(1))).not.toBeNull();
    clock.set(1_000);
    expect(await auth.authenticate(token(1))).toBeNull();
  });

  it("answers a stale owner at once when allowed (HTTP) and re-checks in the background, batched", async () => {
    const { owners, s, clock, auth } = staleAuthenticator([1, 2, 3]);
    await Promise.all([1, 2, 3].map((n) => auth.authenticate(token(n))));
    expect(s.calls).toHaveLength(1);
    owners.delete(hashToken(token(2)));
    clock.set(5_000);
    // The background re-check runs on a timer: fake it, so the test runs it when it chooses.
    vi.useFakeTimers({ toFake: ["setTimeout"] });
    try {
      // Past the TTL: the cached owners answer at once, without a query of their own...
      expect(await auth.authenticate(token(1), true)).toEqual(ownerOf(1));
      expect(await auth.authenticate(token(2), true)).toEqual(ownerOf(2));
      expect(await auth.authenticate(token(3), true)).not.toBeNull();
      expect(s.calls).toHaveLength(1);
      // ...and one query re-checks all three; the deleted router is refused from then on.
      await vi.runAllTimersAsync();
    } finally {
      vi.useRealTimers();
    }
    expect(s.calls).toHaveLength(2);
    expect(s.calls[1]?.sort()).toEqual([1, 2, 3].map((n) => hashToken(token(n))).sort());
    expect(await auth.authenticate(token(2), true)).toBeNull();
    expect(await auth.authenticate(token(1), true)).not.toBeNull();
    // Past TTL + staleMs even the HTTP path waits for the database; without allowStale, the TTL rules.
    clock.set(5_000 + 11_000);
    expect(await auth.authenticate(token(1), true)).not.toBeNull();
    expect(s.calls).toHaveLength(3);
    clock.advance(1_000);
    expect(await auth.authenticate(token(3))).not.toBeNull();
    expect(s.calls).toHaveLength(4);
  });

  it("with recheckAfterMs, answers stale owners without a re-check until the entry is that old", async () => {
    const owners = new Map([[hashToken(token(1)), ownerOf(1)]]);
    const s = store(owners);
    const clock = new ManualClock(0);
    const auth = new TokenAuthenticator({
      lookup: s.lookup,
      ttlMs: 1_000,
      staleMs: 10_000,
      recheckAfterMs: 5_000,
      refreshEveryMs: 0,
      clock,
    });
    expect(await auth.authenticate(token(1))).not.toBeNull();
    owners.clear();
    vi.useFakeTimers({ toFake: ["setTimeout"] });
    try {
      clock.set(4_999);
      expect(auth.cached(token(1), true)).toEqual(ownerOf(1));
      await vi.runAllTimersAsync();
      expect(s.calls).toHaveLength(1);
      clock.set(5_000);
      expect(auth.cached(token(1), true)).toEqual(ownerOf(1));
      await vi.runAllTimersAsync();
      expect(s.calls).toHaveLength(2);
      expect(auth.cached(token(1), true)).toBeNull();
    } finally {
      vi.useRealTimers();
    }
  });

  it("re-checks a period's stale tokens in one query up to REFRESH_BATCH, and one more past it", async () => {
    for (const count of [REFRESH_BATCH, REFRESH_BATCH + 1]) {
      const numbers = Array.from({ length: count }, (_, n) => n);
      const { s, clock, auth } = staleAuthenticator(numbers);
      await Promise.all(numbers.map((n) => auth.authenticate(token(n))));
      const first = s.calls.length;
      clock.set(2_000);
      vi.useFakeTimers({ toFake: ["setTimeout"] });
      try {
        for (const n of numbers) await auth.authenticate(token(n), true);
        await vi.runAllTimersAsync();
      } finally {
        vi.useRealTimers();
      }
      expect(s.calls.slice(first).map((c) => c.length)).toEqual(count > REFRESH_BATCH ? [REFRESH_BATCH, 1] : [count]);
    }
  });

  it("keeps at most two lookups in flight; tokens arriving meanwhile gather into the next batch", async () => {
    const owners = new Map(Array.from({ length: 50 }, (_, n) => [hashToken(token(n)), ownerOf(n)] as const));
    const calls: number[] = [];
    const release: Array<() => void> = [];
    const lookup = {
      lookupTokens: async (hashes: readonly string[]) => {
        calls.push(hashes.length);
        await new Promise<void>((resolve) => release.push(resolve));
        return new Map(hashes.flatMap((h) => (owners.has(h) ? [[h, owners.get(h) as TokenOwner] as const] : [])));
      },
    };
    const auth = new TokenAuthenticator({ lookup, ttlMs: 60_000, clock: new ManualClock(0) });
    const tick = () => new Promise((resolve) => setImmediate(resolve));
    const answers: Array<Promise<TokenOwner | null>> = [];
    // Ten event-loop turns of five upgrades each, while the database is slow.
    for (let turn = 0; turn < 10; turn++) {
      for (let k = 0; k < 5; k++) answers.push(auth.authenticate(token(turn * 5 + k)));
      await tick();
    }
    expect(calls).toEqual([5, 5]);
    while (release.length > 0) {
      release.shift()?.();
      await tick();
      await tick();
    }
    expect((await Promise.all(answers)).every((owner) => owner !== null)).toBe(true);
    expect(calls).toEqual([5, 5, 40]);
  });

  it("with gatherMs, gathers first-time lookups of many event-loop turns into one query", async () => {
    const owners = new Map(Array.from({ length: 20 }, (_, n) => [hashToken(token(n)), ownerOf(n)] as const));
    const s = store(owners);
    const auth = new TokenAuthenticator({ lookup: s.lookup, ttlMs: 60_000, gatherMs: 200, clock: new ManualClock(0) });
    const tick = () => new Promise((resolve) => setImmediate(resolve));
    const answers: Array<Promise<TokenOwner | null>> = [];
    // One HTTP request per event-loop turn, as they arrive over a load balancer's pool.
    for (let n = 0; n < 20; n++) {
      answers.push(auth.authenticate(token(n), true));
      await tick();
    }
    expect((await Promise.all(answers)).map((owner) => owner?.routerId)).toEqual(
      Array.from({ length: 20 }, (_, n) => `r${n}`),
    );
    expect(s.calls.map((c) => c.length)).toEqual([20]);
  });

  it("forgets a revoked router at once", async () => {
    const owners = new Map([[hashToken(token(1)), ownerOf(1)]]);
    const auth = new TokenAuthenticator({ lookup: store(owners).lookup, ttlMs: 60_000, clock: new ManualClock(0) });
    expect(await auth.authenticate(token(1))).not.toBeNull();
    auth.revokeRouter("r1");
    expect(await auth.authenticate(token(1))).toBeNull();
  });

  it("a replaced token is checked again at once; a lookup already running when it was replaced is not believed", async () => {
    const owners = new Map([[hashToken(token(1)), ownerOf(1)]]);
    let release: () => void = () => {};
    let gate: Promise<void> | undefined;
    const lookup = {
      lookupTokens: async (hashes: readonly string[]) => {
        // Reads the database "before" the change, then waits: the replacement lands meanwhile.
        const found = new Map(
          hashes.flatMap((h) => (owners.has(h) ? [[h, owners.get(h) as TokenOwner] as const] : [])),
        );
        if (gate) await gate;
        return found;
      },
    };
    const auth = new TokenAuthenticator({ lookup, ttlMs: 60_000, staleMs: 600_000, clock: new ManualClock(0) });
    expect(await auth.authenticate(token(1), true)).not.toBeNull();
    // Cached: a replacement drops it, and the next check asks the database (which no longer knows it).
    owners.delete(hashToken(token(1)));
    auth.forgetRouter("r1");
    expect(await auth.authenticate(token(1), true)).toBeNull();
    // A lookup in flight when the token is replaced read the old row: it is asked again.
    owners.set(hashToken(token(2)), { ...ownerOf(2), routerId: "r1" });
    gate = new Promise((resolve) => {
      release = resolve;
    });
    const answer = auth.authenticate(token(2));
    await new Promise((resolve) => setImmediate(resolve));
    owners.delete(hashToken(token(2)));
    auth.forgetRouter("r1");
    gate = undefined;
    release();
    expect(await answer).toBeNull();
  });

  it("a background re-check running when its router is revoked does not bring the token back", async () => {
    const owners = new Map([[hashToken(token(1)), ownerOf(1)]]);
    let release: () => void = () => {};
    let gate: Promise<void> | undefined;
    const lookup = {
      lookupTokens: async (hashes: readonly string[]) => {
        const found = new Map(
          hashes.flatMap((h) => (owners.has(h) ? [[h, owners.get(h) as TokenOwner] as const] : [])),
        );
        if (gate) await gate;
        return found;
      },
    };
    const clock = new ManualClock(0);
    const auth = new TokenAuthenticator({ lookup, ttlMs: 1_000, staleMs: 10_000, refreshEveryMs: 0, clock });
    expect(await auth.authenticate(token(1), true)).not.toBeNull();
    clock.set(2_000);
    gate = new Promise((resolve) => {
      release = resolve;
    });
    vi.useFakeTimers({ toFake: ["setTimeout"] });
    try {
      // Stale: answered, and the re-check starts (it reads the row, then waits).
      expect(auth.cached(token(1), true)).toEqual(ownerOf(1));
      await vi.advanceTimersByTimeAsync(0);
    } finally {
      vi.useRealTimers();
    }
    expect(auth.lookups).toBe(2);
    auth.revokeRouter("r1");
    gate = undefined;
    release();
    await new Promise((resolve) => setImmediate(resolve));
    expect(auth.cached(token(1), true)).toBeNull();
  });

  it("revokes one replaced token of a router, not the router's current one", async () => {
    const owners = new Map([
      [hashToken(token(1)), ownerOf(1)],
      [hashToken(token(2)), { ...ownerOf(2), routerId: "r1" }],
    ]);
    const auth = new TokenAuthenticator({ lookup: store(owners).lookup, ttlMs: 60_000, clock: new ManualClock(0) });
    expect(await auth.authenticate(token(1))).not.toBeNull();
    expect(await auth.authenticate(token(2))).not.toBeNull();
    auth.revokeToken("r1", hashToken(token(1)));
    expect(await auth.authenticate(token(1))).toBeNull();
    expect(await auth.authenticate(token(2))).toMatchObject({ routerId: "r1" });
  });

  it("refuses implausible tokens without a query and bounds remembered unknown ones", async () => {
    const s = store(new Map());
    const auth = new TokenAuthenticator({ lookup: s.lookup, ttlMs: 60_000, maxUnknown: 3, clock: new ManualClock(0) });
    for (const bad of [undefined, "", "short", "x".repeat(257), "has space inside it"])
      expect(await auth.authenticate(bad)).toBeNull();
    expect(s.calls).toHaveLength(0);
    for (let i = 0; i < 5; i++) await auth.authenticate(token(i));
    expect(s.calls).toHaveLength(5);
    // Only the 3 most recent unknown tokens are remembered.
    await auth.authenticate(token(4));
    expect(s.calls).toHaveLength(5);
    await auth.authenticate(token(0));
    expect(s.calls).toHaveLength(6);
  });

  it("answers a header as its token would be, remembering the headers of cached owners only", async () => {
    const { auth } = staleAuthenticator([1, 2]);
    const header = `Bearer ${token(1)}`;
    // Not cached yet: only the database can tell, and nothing is remembered.
    expect(auth.cachedBearer(header, true)).toBeUndefined();
    expect(auth.headersRemembered).toBe(0);
    await auth.authenticate(token(1), true);
    expect(auth.cachedBearer(header, true)).toMatchObject({ routerId: "r1" });
    expect(auth.headersRemembered).toBe(1);
    expect(auth.cachedBearer(header, true)).toMatchObject({ routerId: "r1" });
    // Other spellings of the same token answer the same owner, but only `Bearer <token>` is
    // remembered: a router cannot fill the map with its token padded with spaces.
    for (const spelling of [`bearer\t${token(1)}`, `Bearer ${token(1)} `, `Bearer  ${token(1)}`, `BEARER ${token(1)}`])
      expect(auth.cachedBearer(spelling, true)).toMatchObject({ routerId: "r1" });
    expect(auth.headersRemembered).toBe(1);
    await auth.authenticate(token(2), true);
    expect(auth.cachedBearer(`Bearer ${token(2)}`, true)).toMatchObject({ routerId: "r2" });
    expect(auth.headersRemembered).toBe(2);
    // Refused without a lookup, and not remembered: malformed, missing, unknown.
    for (const bad of [undefined, "Bearer short", "Basic abc", `Bearer ${token(1)} x`])
      expect(auth.cachedBearer(bad, true)).toBeNull();
    await auth.authenticate(token(3), true);
    expect(auth.cachedBearer(`Bearer ${token(3)}`, true)).toBeNull();
    expect(auth.headersRemembered).toBe(2);
  });

  it("a remembered header is refused once its router is revoked, and asks again once its token is replaced or expired", async () => {
    const { owners, s, clock, auth } = staleAuthenticator([1, 2]);
    await auth.authenticate(token(1), true);
    await auth.authenticate(token(2), true);
    const one = `Bearer ${token(1)}`;
    const two = `Bearer ${token(2)}`;
    expect(auth.cachedBearer(one, true)).toMatchObject({ routerId: "r1" });
    expect(auth.cachedBearer(two, true)).toMatchObject({ routerId: "r2" });
    auth.revokeRouter("r1");
    expect(auth.cachedBearer(one, true)).toBeNull();
    auth.forgetRouter("r2");
    expect(auth.cachedBearer(two, true)).toBeUndefined();
    expect(await auth.authenticate(token(2), true)).toMatchObject({ routerId: "r2" });
    expect(auth.cachedBearer(two, true)).toMatchObject({ routerId: "r2" });
    // Past the TTL and the stale window (1 s + 10 s) the header is no shortcut: the database is asked.
    owners.clear();
    clock.set(11_000);
    expect(auth.cachedBearer(two, true)).toBeUndefined();
    const before = s.calls.length;
    expect(await auth.authenticate(token(2), true)).toBeNull();
    expect(s.calls.length).toBe(before + 1);
    expect(auth.cachedBearer(two, true)).toBeNull();
  });

  it("remembers at most maxEntries headers: at the limit the oldest goes", async () => {
    const numbers = [0, 1, 2, 3];
    const owners = new Map(numbers.map((n) => [hashToken(token(n)), ownerOf(n)] as const));
    const auth = new TokenAuthenticator({
      lookup: store(owners).lookup,
      ttlMs: 60_000,
      maxEntries: 3,
      clock: new ManualClock(0),
    });
    await Promise.all([0, 1, 2].map((n) => auth.authenticate(token(n))));
    for (const n of [0, 1, 2]) expect(auth.cachedBearer(`Bearer ${token(n)}`)).toMatchObject({ routerId: `r${n}` });
    expect(auth.headersRemembered).toBe(3);
    // A fourth (the cache's own limit evicts r0's entry too): still 3 headers, r0's went first.
    await auth.authenticate(token(3));
    expect(auth.cachedBearer(`Bearer ${token(3)}`)).toMatchObject({ routerId: "r3" });
    expect(auth.headersRemembered).toBe(3);
    expect(auth.cachedBearer(`Bearer ${token(0)}`)).toBeUndefined();
    expect(auth.headersRemembered).toBe(3);
    for (const n of [1, 2, 3]) expect(auth.cachedBearer(`Bearer ${token(n)}`)).toMatchObject({ routerId: `r${n}` });
  });

  it("reads the bearer token from the header", () => {
    expect(bearerToken("Bearer abc")).toBe("abc");
    expect(bearerToken("bearer   abc ")).toBe("abc");
    expect(bearerToken("Basic abc")).toBeUndefined();
    expect(bearerToken(undefined)).toBeUndefined();
    expect(bearerToken("BEARER\tabc\t")).toBe("abc");
    expect(bearerToken("Bearer")).toBeUndefined();
    expect(bearerToken("Bearer ")).toBeUndefined();
    expect(bearerToken("Bearerabc")).toBeUndefined();
    expect(bearerToken("Bearer a b")).toBeUndefined();
    expect(bearerToken("Bearer hb_x,Content-Type: application/json")).toBeUndefined();
  });
});
