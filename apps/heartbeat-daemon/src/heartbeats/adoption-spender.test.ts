import type { TokenOwner } from "@fleet/db";
import { ManualClock } from "@fleet/shared";
import { eventually } from "@fleet/shared/testing";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { AdoptionSpender } from "./adoption-spender.ts";

const owner = (adoptionOpen: boolean): TokenOwner => ({
  routerId: "0b6c6a8e-1111-4222-8333-944455556666",
  teamId: "team",
  tunnelIp: null,
  tokenHash: "a".repeat(64),
  adoptionOpen,
});

const store = () => {
  const writes: string[] = [];
  let next: () => Promise<void> = async () => {};
  return {
    writes,
    fail: (make: () => Promise<void>) => {
      next = make;
    },
    spendAdoption: async (routerId: string) => {
      writes.push(routerId);
      await next();
    },
  };
};

const logger = pino({ level: "silent" });

describe("spending the adoption URL with a token's first heartbeat", () => {
  it("writes once for a router with an open URL; every other heartbeat acks at once", async () => {
    const s = store();
    const spender = new AdoptionSpender({ store: s, clock: new ManualClock(), logger });
    const steady = owner(false);
    expect(spender.spend(steady)).toBeUndefined();
    const first = owner(true);
    // Two heartbeats at once (two sockets) share the one write.
    const a = spender.spend(first);
    const b = spender.spend(first);
    expect(a).toBeInstanceOf(Promise);
    await Promise.all([a, b]);
    expect(s.writes).toHaveLength(1);
    expect(first.adoptionOpen).toBe(false);
    expect(spender.spend(first)).toBeUndefined();
    expect(s.writes).toHaveLength(1);
  });

  it("a failed write is tried again at the next heartbeat; a slow one holds the ack only waitMs", async () => {
    const s = store();
    const spender = new AdoptionSpender({ store: s, clock: new ManualClock(), logger, waitMs: 20 });
    const first = owner(true);
    s.fail(async () => {
      throw new Error("database unreachable");
    });
    await spender.spend(first);
    expect(first.adoptionOpen).toBe(true);
    let release: () => void = () => {};
    s.fail(() => new Promise<void>((resolve) => (release = resolve)));
    // Resolves though the write has not landed: the ack is not held past waitMs.
    await spender.spend(first);
    expect(first.adoptionOpen).toBe(true);
    release();
    await eventually(() => first.adoptionOpen === false, "the slow write to land");
    expect(s.writes).toHaveLength(2);
  });
});
