import { describe, expect, it } from "vitest";
import { readPlainHeartbeat, ZHeartbeatFrame } from "./heartbeat.schema.ts";

// Values each field may take in the corpus: valid ones in every form a router writes, and the
// refused ones next to them (at and past each limit).
const text = (max: number) => [
  undefined,
  null,
  "",
  "MikroTik",
  "x".repeat(max),
  "x".repeat(max + 1),
  "bad\u0000nul",
  "tab\there",
  "del\u007f",
  "lone \ud800 surrogate",
  "pair \ud83d\ude00 ok",
  "ünïcødé",
  123456,
  1.5,
  -0,
  1e21,
  Number("9".repeat(max + 1)),
  true,
  false,
  [],
  ["a"],
  {},
  { a: 1 },
];
const values: Record<string, unknown[]> = {
  type: ["heartbeat", "heartbeat", "heartbeat", "Heartbeat", "ack", 1, null, undefined],
  identity: text(255),
  serial_number: text(255),
  software_version: text(100),
  software_id: text(100),
  model: text(100),
  board_name: text(100),
  hardwareboard: [undefined, null, true, false, "true", "FALSE", "yes", "No", "maybe", "", 1, 0, "truest", {}, []],
  uptime: [
    undefined,
    null,
    0,
    86_400,
    1.5,
    -1,
    1e10,
    1e10 + 1,
    "3600",
    "3600.5",
    "1w2d03:04:05",
    "03:04:05",
    "5d",
    "-3",
    "soon",
    "",
    true,
    {},
    [],
  ],
  tunnel_ip: [
    undefined,
    null,
    "10.0.0.1",
    "::ffff:10.0.0.1",
    "fd00::1",
    "FD00:0:0:0:0:0:0:1",
    "10.0.0.256",
    "010.0.0.1",
    "0x0a.0.0.1",
    "",
    "1".repeat(46),
    7,
    {},
  ],
  metadata: [undefined, null, {}, { site: "north" }, { "\u0001": 1 }, [], "text", 3],
  resources: [
    undefined,
    null,
    { cpu_load: "12.000000", memory_total: 1024, memory_free: "512", temperature: 41 },
    { cpu_load: 100, disk_total: 10, disk_free: 10, voltage: "24.1" },
    {},
    { cpu_load: "NaN" },
    { memory_total: -1 },
    { memory_total: 1e30 },
    { memory_total: 1, memory_free: 2 },
    "busy",
    [],
  ],
  interfaces: [
    undefined,
    null,
    [{ name: "ether1", rx_bytes: "1000", tx_bytes: 2000.0, running: "true" }],
    [{ name: "wg0", rx_errors: 0, tx_errors: "0", running: false }],
    [],
    [{ name: "bad\u0001" }],
    [{ name: "a" }, { name: "a" }],
    [{ name: "ether1", rx_bytes: -5 }],
    [{ name: "ether1", running: "maybe" }],
    { name: "ether1" },
  ],
  ping: [
    undefined,
    null,
    { target: "10.255.0.1", sent: 5, received: "4", rtt_avg_ms: "1.5", rtt_max_ms: 3 },
    { sent: "5.000000", received: 5 },
    {},
    { sent: 5, received: 6 },
    { rtt_avg_ms: "inf" },
    { target: 7 },
  ],
  extra: [undefined, "ignored", { nested: true }],
};

/** A seeded PRNG (mulberry32): the corpus is the same on every run. */
const random = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};

const corpus = (count: number, pick: (field: string, options: unknown[], next: () => number) => unknown) => {
  const next = random(20261123);
  const frames: Record<string, unknown>[] = [];
  for (let i = 0; i < count; i++) {
    const frame: Record<string, unknown> = {};
    for (const [field, options] of Object.entries(values)) {
      const value = pick(field, options, next);
      if (value !== undefined) frame[field] = value;
    }
    // Through JSON, as a frame arrives (no undefined, no -0).
    frames.push(JSON.parse(JSON.stringify(frame)));
  }
  return frames;
};

describe("readPlainHeartbeat, the daemon's fast path", () => {
  it("accepts only what zod accepts, and returns exactly zod's result", () => {
    // Mostly the first (valid) values of each list, now and then any: both sides of every check are hit.
    const frames = corpus(20_000, (_field, options, next) =>
      next() < 0.92 ? options[Math.floor(next() * 5)] : options[Math.floor(next() * options.length)],
    );
    let fast = 0;
    let refused = 0;
    for (const frame of frames) {
      const plain = readPlainHeartbeat(frame);
      const zod = ZHeartbeatFrame.safeParse(frame);
      if (!zod.success) refused++;
      if (plain === undefined) continue;
      fast++;
      expect(zod.success, JSON.stringify(frame)).toBe(true);
      expect(plain, JSON.stringify(frame)).toStrictEqual(zod.data);
    }
    // The corpus exercises both: frames the fast path takes and frames only zod decides.
    expect(fast).toBeGreaterThan(100);
    expect(refused).toBeGreaterThan(1_000);
  });

  it("takes every frame of the shapes routers send (the scheduler's, the bench's, nulls for empty values)", () => {
    const routerValue: Record<string, (next: () => number) => unknown> = {
      type: () => "heartbeat",
      hardwareboard: (next) => [true, false, "true", "false", null][Math.floor(next() * 5)],
      uptime: (next) => [86_400, "1w2d03:04:05", "3600", null][Math.floor(next() * 4)],
      tunnel_ip: (next) => [undefined, null, "10.0.0.1", "fd00::1"][Math.floor(next() * 4)],
      metadata: (next) => (next() < 0.5 ? undefined : null),
      resources: (next) =>
        [undefined, null, { cpu_load: "3.000000", memory_total: 10, memory_free: "5" }][Math.floor(next() * 3)],
      interfaces: (next) =>
        [undefined, [{ name: "ether1", rx_bytes: "1000.000000", running: "true" }]][Math.floor(next() * 2)],
      ping: (next) => [undefined, { sent: 5, received: "5", rtt_avg_ms: 1.5 }][Math.floor(next() * 2)],
      extra: () => "newer script",
    };
    const frames = corpus(2_000, (field, _options, next) =>
      routerValue[field] ? routerValue[field](next) : ["RB5009", 123456, null, undefined][Math.floor(next() * 4)],
    );
    for (const frame of frames) {
      const zod = ZHeartbeatFrame.safeParse(frame);
      expect(zod.success).toBe(true);
      expect(readPlainHeartbeat(frame), JSON.stringify(frame)).toStrictEqual(zod.data);
    }
  });

  it("leaves a frame with metadata, or any refused value, to zod", () => {
    expect(readPlainHeartbeat({ type: "heartbeat", metadata: { site: "north" } })).toBeUndefined();
    expect(readPlainHeartbeat({ type: "heartbeat", identity: "x".repeat(256) })).toBeUndefined();
    expect(readPlainHeartbeat({ type: "heartbeat", identity: "x".repeat(255) })).toEqual({
      type: "heartbeat",
      identity: "x".repeat(255),
    });
    expect(readPlainHeartbeat({ type: "heartbeat", uptime: 1e10 + 1 })).toBeUndefined();
    expect(readPlainHeartbeat({ type: "heartbeat", uptime: 1e10 })).toEqual({ type: "heartbeat", uptime: 1e10 });
    expect(readPlainHeartbeat({ type: "ack" })).toBeUndefined();
  });
});
