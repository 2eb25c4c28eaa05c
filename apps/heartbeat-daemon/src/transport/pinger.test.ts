import { describe, expect, it } from "vitest";
import { type Liveness, pingVerdict } from "./pinger.ts";

const PERIOD = 30_000;
const fresh = (): Liveness => ({ pongAt: Number.NEGATIVE_INFINITY, pingedAt: null });

describe("pingVerdict: a frame proves a peer is there as well as a pong", () => {
  it("never pings a router that beats once per period, even when the visits drift against its beats", () => {
    for (const visitEvery of [29_000, 30_000, 31_500]) {
      const peer = fresh();
      let lastFrameAt = 0;
      for (let now = 0; now < 100 * PERIOD; now += visitEvery) {
        // A beat every period, each one 2 s late.
        while (lastFrameAt + PERIOD + 2_000 <= now) lastFrameAt += PERIOD + 2_000;
        expect(pingVerdict(peer, lastFrameAt, now, PERIOD)).toBe("ok");
      }
    }
  });

  it("pings a peer quiet for 1.5 periods, not before", () => {
    const peer = fresh();
    expect(pingVerdict(peer, 0, 1.5 * PERIOD - 1, PERIOD)).toBe("ok");
    expect(pingVerdict(peer, 0, 1.5 * PERIOD, PERIOD)).toBe("ping");
    expect(peer.pingedAt).toBe(1.5 * PERIOD);
  });

  it("keeps a quiet peer that answers its pings, pinging it every other visit", () => {
    const peer = fresh();
    const verdicts: string[] = [];
    for (let visit = 2; visit <= 9; visit++) {
      const now = visit * PERIOD;
      const verdict = pingVerdict(peer, 0, now, PERIOD);
      verdicts.push(verdict);
      if (verdict === "ping") peer.pongAt = now + 5; // the pong comes back at once
    }
    expect(verdicts).toEqual(["ping", "ok", "ping", "ok", "ping", "ok", "ping", "ok"]);
  });

  it("keeps an answering peer however late the next visit comes", () => {
    const peer = fresh();
    expect(pingVerdict(peer, 0, 2 * PERIOD, PERIOD)).toBe("ping");
    peer.pongAt = 2 * PERIOD + 5;
    expect(pingVerdict(peer, 0, 10 * PERIOD, PERIOD)).toBe("ping");
  });

  it("terminates a peer that answered neither with a pong nor a frame by the next visit", () => {
    const peer = fresh();
    expect(pingVerdict(peer, 0, PERIOD, PERIOD)).toBe("ok");
    expect(pingVerdict(peer, 0, 2 * PERIOD, PERIOD)).toBe("ping");
    expect(pingVerdict(peer, 0, 3 * PERIOD, PERIOD)).toBe("terminate");
  });

  it("takes a frame after the ping as its answer", () => {
    const peer = fresh();
    expect(pingVerdict(peer, 0, 2 * PERIOD, PERIOD)).toBe("ping");
    expect(pingVerdict(peer, 2.5 * PERIOD, 3 * PERIOD, PERIOD)).toBe("ok");
    expect(peer.pingedAt).toBeNull();
  });
});
