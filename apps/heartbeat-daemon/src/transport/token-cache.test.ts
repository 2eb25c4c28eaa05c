import type { TokenOwner } from "@fleet/db";
import { ManualClock } from "@fleet/shared";
import { describe, expect, it } from "vitest";
import { FloodGuard } from "./flood-guard.ts";
import { TokenCache, type TokenCacheOptions } from "./token-cache.ts";

const hash = (n: number) => `hash_${n}`;
const ownerOf = (n: number, routerId = `r${n}`): TokenOwner => ({
  routerId,
  teamId: "t",
  tunnelIp: null,
  tokenHash: hash(n),
});

const cache = (options: Partial<TokenCacheOptions> = {}) => {
  const clock = new ManualClock(0);
  const rechecks: string[] = [];
  const c = new TokenCache({ ttlMs: 1_000, clock, onRecheck: (h) => rechecks.push(h), ...options });
  return { c, clock, rechecks };
};

describe("TokenCache", () => {
  it("answers an owner until the TTL, then only to allowStale callers until the stale window ends", () => {
    const { c, clock, rechecks } = cache({ staleMs: 10_000 });
    expect(c.answer(hash(1), false)).toBeUndefined();
    c.remember(hash(1), ownerOf(1));
    clock.set(999);
    expect(c.answer(hash(1), false)).toEqual(ownerOf(1));
    expect(rechecks).toEqual([]);
    clock.set(1_000);
    expect(c.answer(hash(1), false)).toBeUndefined();
    expect(c.answer(hash(1), true)).toEqual(ownerOf(1));
    expect(rechecks).toEqual([hash(1)]);
    clock.set(10_999);
    expect(c.answer(hash(1), true)).toEqual(ownerOf(1));
    clock.set(11_000);
    expect(c.answer(hash(1), true)).toBeUndefined();
  });

  it("with recheckAfterMs, asks for a re-check of a stale owner only once the entry is that old", () => {
    const { c, clock, rechecks } = cache({ staleMs: 10_000, recheckAfterMs: 5_000 });
    c.remember(hash(1), ownerOf(1));
    clock.set(4_999);
    expect(c.answer(hash(1), true)).toEqual(ownerOf(1));
    expect(rechecks).toEqual([]);
    clock.set(5_000);
    expect(c.answer(hash(1), true)).toEqual(ownerOf(1));
    expect(rechecks).toEqual([hash(1)]);
  });

  it("remembers unknown tokens for the TTL, at most maxUnknown, without pushing out owners", () => {
    const { c, clock } = cache({ maxUnknown: 3, maxEntries: 2 });
    c.remember(hash(100), ownerOf(100));
    for (let n = 0; n < 3; n++) c.remember(hash(n), null);
    for (let n = 0; n < 3; n++) expect(c.answer(hash(n), false)).toBeNull();
    c.remember(hash(3), null);
    // At n+1 the least recently used unknown token goes; the owner stays.
    expect(c.answer(hash(0), false)).toBeUndefined();
    for (const n of [1, 2, 3]) expect(c.answer(hash(n), false)).toBeNull();
    expect(c.answer(hash(100), false)).toEqual(ownerOf(100));
    clock.set(1_000);
    expect(c.answer(hash(3), true)).toBeUndefined();
  });

  it("keeps at most maxEntries owners: at n+1 the least recently used goes", () => {
    const { c } = cache({ maxEntries: 2 });
    c.remember(hash(1), ownerOf(1));
    c.remember(hash(2), ownerOf(2));
    expect(c.size).toBe(2);
    c.answer(hash(1), false);
    c.remember(hash(3), ownerOf(3));
    expect(c.size).toBe(2);
    expect(c.answer(hash(2), false)).toBeUndefined();
    expect(c.answer(hash(1), false)).toEqual(ownerOf(1));
    // The evicted owner's router pointer went with it: revoking r2 refuses nothing.
    c.revokeRouter("r2");
    expect(c.answer(hash(2), false)).toBeUndefined();
  });

  it("revokeRouter refuses the router's token, forgetRouter asks again, revokeHash refuses one token", () => {
    const { c } = cache();
    c.remember(hash(1), ownerOf(1));
    c.remember(hash(2), ownerOf(2));
    c.remember(hash(3), ownerOf(3, "r2"));
    c.revokeRouter("r1");
    expect(c.answer(hash(1), true)).toBeNull();
    expect(c.forgetRouter("r2")).toBe(hash(3));
    expect(c.answer(hash(3), true)).toBeUndefined();
    expect(c.answer(hash(2), true)).toEqual(ownerOf(2));
    c.revokeHash(hash(2));
    expect(c.answer(hash(2), true)).toBeNull();
    c.remember(hash(2), ownerOf(2));
    expect(c.answer(hash(2), true)).toEqual(ownerOf(2));
  });

  it("a re-check keeps the router's flood bucket; another router's answer does not inherit it", () => {
    const { c } = cache();
    const first = { ...ownerOf(1), httpFlood: new FloodGuard(1, 1, new ManualClock(0)) };
    c.remember(hash(1), first);
    c.remember(hash(1), ownerOf(1));
    expect(c.answer(hash(1), false)?.httpFlood).toBe(first.httpFlood);
    c.remember(hash(1), ownerOf(1, "other"));
    expect(c.answer(hash(1), false)?.httpFlood).toBeUndefined();
  });

  it("remembers plain `Bearer <token>` headers only, while their owner is cached, at most maxEntries", () => {
    const { c } = cache({ maxEntries: 2 });
    c.remember(hash(1), ownerOf(1));
    c.remember(hash(2), ownerOf(2));
    const owner = c.answer(hash(1), false) ?? ownerOf(1);
    for (const spelling of ["bearer tok1", "Bearer  tok1", "Bearer tok1 "])
      c.rememberHeader(spelling, "tok1", hash(1), owner);
    expect(c.headersRemembered).toBe(0);
    c.rememberHeader("Bearer tok1", "tok1", hash(1), owner);
    expect(c.headerHash("Bearer tok1")).toBe(hash(1));
    c.rememberHeader("Bearer tok2", "tok2", hash(2), ownerOf(2));
    c.rememberHeader("Bearer tok9", "tok9", hash(9), ownerOf(9));
    expect(c.headersRemembered).toBe(2);
    expect(c.headerHash("Bearer tok1")).toBeUndefined();
    c.revokeRouter("r2");
    expect(c.headerHash("Bearer tok2")).toBeUndefined();
    expect(c.headersRemembered).toBe(1);
  });
});
