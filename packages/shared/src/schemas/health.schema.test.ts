import { describe, expect, it } from "vitest";
import {
  HEALTH_INTERFACE_NAME_MAX,
  HEALTH_MAX_INTERFACES,
  isHealthInterfaceName,
  pingLossPercent,
  usedPercent,
} from "./health.schema.ts";
import { type HealthIssue, readHealthInterfaces, readHealthPing, readHealthResources } from "./health.schema.ts";
import { readPlainHeartbeat, ZHeartbeatFrame } from "./heartbeat.schema.ts";

const refusal = (frame: Record<string, unknown>) => {
  const result = ZHeartbeatFrame.safeParse({ type: "heartbeat", ...frame });
  expect(readPlainHeartbeat({ type: "heartbeat", ...frame })).toBeUndefined();
  return result.success ? undefined : result.error.issues[0]?.path.map(String).join(".");
};

const accepted = (frame: Record<string, unknown>) => {
  const result = ZHeartbeatFrame.safeParse({ type: "heartbeat", ...frame });
  expect(result.success, JSON.stringify(result.error?.issues)).toBe(true);
  // The fast path answers the same.
  expect(readPlainHeartbeat({ type: "heartbeat", ...frame })).toStrictEqual(result.data);
  return result.data;
};

const interfaces = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ name: `ether${i + 1}`, rx_bytes: i, tx_bytes: "12.000000", running: "true" }));

describe('heartbeat health (docs/api.md "Health")', () => {
  it("takes values as RouterOS writes them: floats and numeric strings", () => {
    const frame = accepted({
      resources: {
        cpu_load: "12.000000",
        memory_total: 1073741824,
        memory_free: "536870912",
        disk_total: 134217728.0,
        disk_free: 67108864,
        temperature: "41.5",
        voltage: 24.1,
      },
      interfaces: [{ name: "ether1", rx_bytes: "1.2e9", tx_bytes: 0, rx_errors: 0, tx_errors: "3", running: "yes" }],
      ping: { target: "10.255.0.1", sent: "5", received: 4, rtt_avg_ms: "1.25", rtt_max_ms: 3 },
    });
    expect(frame?.resources).toEqual({
      cpu_load: 12,
      memory_total: 1073741824,
      memory_free: 536870912,
      disk_total: 134217728,
      disk_free: 67108864,
      temperature: 41.5,
      voltage: 24.1,
    });
    expect(frame?.interfaces).toEqual([
      { name: "ether1", rx_bytes: 1.2e9, tx_bytes: 0, rx_errors: 0, tx_errors: 3, running: true },
    ]);
    expect(frame?.ping).toEqual({ target: "10.255.0.1", sent: 5, received: 4, rtt_avg_ms: 1.25, rtt_max_ms: 3 });
    expect(usedPercent(1000, 250)).toBe(75);
    expect(usedPercent(0, 0)).toBeNull();
    expect(pingLossPercent({ sent: 5, received: 4 })).toBe(20);
    expect(pingLossPercent({ sent: 0, received: 0 })).toBeNull();
  });

  it("refuses NaN, inf, negative bytes, 10^30 and out-of-range values, naming the field", () => {
    expect(refusal({ resources: { cpu_load: "NaN" } })).toBe("resources.cpu_load");
    expect(refusal({ resources: { cpu_load: "inf" } })).toBe("resources.cpu_load");
    expect(refusal({ resources: { cpu_load: "-inf" } })).toBe("resources.cpu_load");
    expect(refusal({ resources: { cpu_load: 100.5 } })).toBe("resources.cpu_load");
    expect(refusal({ resources: { cpu_load: -1 } })).toBe("resources.cpu_load");
    expect(refusal({ resources: { cpu_load: " 5" } })).toBe("resources.cpu_load");
    expect(refusal({ resources: { cpu_load: true } })).toBe("resources.cpu_load");
    expect(refusal({ resources: { memory_total: -1 } })).toBe("resources.memory_total");
    expect(refusal({ resources: { memory_total: 1e30 } })).toBe("resources.memory_total");
    expect(refusal({ resources: { memory_total: 10, memory_free: 11 } })).toBe("resources.memory_free");
    expect(refusal({ resources: { disk_total: 10, disk_free: 11 } })).toBe("resources.disk_free");
    expect(refusal({ resources: { temperature: 1e30 } })).toBe("resources.temperature");
    expect(refusal({ resources: { voltage: -3 } })).toBe("resources.voltage");
    expect(refusal({ resources: "busy" })).toBe("resources");
    expect(refusal({ interfaces: [{ name: "ether1", rx_bytes: -5 }] })).toBe("interfaces.0.rx_bytes");
    expect(refusal({ interfaces: [{ name: "ether1", tx_bytes: "1e30" }] })).toBe("interfaces.0.tx_bytes");
    expect(refusal({ interfaces: [{ name: "ether1", rx_errors: 1.5 }] })).toBe("interfaces.0.rx_errors");
    expect(refusal({ interfaces: [{ name: "ether\u0001" }] })).toBe("interfaces.0.name");
    expect(refusal({ interfaces: [{ name: "" }] })).toBe("interfaces.0.name");
    expect(refusal({ interfaces: [{ name: "a" }, { name: "a" }] })).toBe("interfaces.1.name");
    expect(refusal({ interfaces: [{ name: "a", running: "maybe" }] })).toBe("interfaces.0.running");
    expect(refusal({ interfaces: { name: "a" } })).toBe("interfaces");
    expect(refusal({ ping: { sent: 5, received: 6 } })).toBe("ping.received");
    expect(refusal({ ping: { sent: 101 } })).toBe("ping.sent");
    expect(refusal({ ping: { rtt_avg_ms: "NaN" } })).toBe("ping.rtt_avg_ms");
    expect(refusal({ ping: { target: "10.0.0.1\n" } })).toBe("ping.target");
  });

  it("takes at most 64 interfaces (64 accepted, 65 refused)", () => {
    expect(accepted({ interfaces: interfaces(HEALTH_MAX_INTERFACES) })?.interfaces).toHaveLength(64);
    expect(refusal({ interfaces: interfaces(HEALTH_MAX_INTERFACES + 1) })).toBe("interfaces");
  });

  it("takes limits at their edge and null as not reported", () => {
    accepted({ resources: { cpu_load: 100, memory_total: 2 ** 64, memory_free: 0, temperature: -100, voltage: 100 } });
    accepted({ resources: { cpu_load: null, temperature: null }, interfaces: null, ping: null });
    accepted({ resources: {}, interfaces: [], ping: {} });
    accepted({ ping: { sent: 100, received: 100, rtt_avg_ms: 60_000, rtt_max_ms: 0 } });
  });

  it("hostile values (issue 38): spaces, hex, 1e309, -0, names at the limit and one past it", () => {
    for (const value of [
      " 5",
      "5 ",
      "5\t",
      "0x10",
      "0b1",
      "0o7",
      "1e309",
      "-1e309",
      JSON.parse("1e309"),
      "1_000",
      "5,5",
      "",
      "+",
      ".",
      "e5",
      "Infinity",
    ]) {
      expect(refusal({ resources: { cpu_load: value } }), JSON.stringify(value)).toBe("resources.cpu_load");
      expect(refusal({ interfaces: [{ name: "e", rx_bytes: value }] }), JSON.stringify(value)).toBe(
        "interfaces.0.rx_bytes",
      );
      expect(refusal({ ping: { rtt_avg_ms: value } }), JSON.stringify(value)).toBe("ping.rtt_avg_ms");
    }
    // -0 is 0, never a negative zero stored or echoed.
    const zero = accepted({
      resources: { cpu_load: "-0", temperature: -0 },
      interfaces: [{ name: "e", rx_bytes: "-0.0" }],
    });
    expect(Object.is(zero?.resources?.cpu_load, 0)).toBe(true);
    expect(Object.is(zero?.resources?.temperature, 0)).toBe(true);
    expect(Object.is(zero?.interfaces?.[0]?.rx_bytes, 0)).toBe(true);
    expect(refusal({ resources: { memory_total: "-1e-9" } })).toBe("resources.memory_total");
    // A counter at 2^64 and one past it.
    accepted({ interfaces: [{ name: "e", rx_bytes: 2 ** 64 }] });
    expect(refusal({ interfaces: [{ name: "e", rx_bytes: 2 ** 64 + 2 ** 12 }] })).toBe("interfaces.0.rx_bytes");
    // Names: the maximum length, one more, and what a URL path makes hard (held verbatim).
    const longest = "n".repeat(HEALTH_INTERFACE_NAME_MAX);
    expect(accepted({ interfaces: [{ name: longest }] })?.interfaces?.[0]?.name).toBe(longest);
    expect(refusal({ interfaces: [{ name: `${longest}n` }] })).toBe("interfaces.0.name");
    expect(refusal({ interfaces: [{ name: "ether1\u007f" }] })).toBe("interfaces.0.name");
    expect(refusal({ interfaces: [{ name: "\ud800" }] })).toBe("interfaces.0.name");
    expect(refusal({ interfaces: [{ name: JSON.parse("1e309") }] })).toBe("interfaces.0.name");
    expect(refusal({ interfaces: [{ name: ["ether1"] }] })).toBe("interfaces.0.name");
    const odd = accepted({ interfaces: [{ name: "vlan/10" }, { name: ".." }, { name: "%41" }, { name: "A" }] });
    expect(odd?.interfaces?.map((i) => i.name)).toEqual(["vlan/10", "..", "%41", "A"]);
    expect([longest, "vlan/10", ".."].every(isHealthInterfaceName)).toBe(true);
    expect([`${longest}n`, "", "a\u0000", "\udc00"].some(isHealthInterfaceName)).toBe(false);
    // 64 interfaces of the longest names and 65 of the shortest.
    const many = (n: number, name: (i: number) => string) => Array.from({ length: n }, (_, i) => ({ name: name(i) }));
    expect(
      accepted({ interfaces: many(HEALTH_MAX_INTERFACES, (i) => `${i}`.padStart(HEALTH_INTERFACE_NAME_MAX, "x")) })
        ?.interfaces,
    ).toHaveLength(HEALTH_MAX_INTERFACES);
    expect(refusal({ interfaces: many(HEALTH_MAX_INTERFACES + 1, (i) => `${i}`) })).toBe("interfaces");
  });

  it("parses once: plain parts are kept as parsed, RouterOS forms and unknown keys are copied", () => {
    const read = <T>(reader: (value: unknown, issues: HealthIssue[]) => T, value: unknown) => {
      const issues: HealthIssue[] = [];
      const out = reader(value, issues);
      expect(issues).toEqual([]);
      return out;
    };
    const resources = { cpu_load: 12.5, memory_total: 1000, memory_free: 250 };
    const interfaces = [
      { name: "ether1", rx_bytes: 10, tx_bytes: 20, rx_errors: 0, tx_errors: 0, running: true },
      { name: "wg0", running: null },
    ];
    const ping = { target: "10.255.0.1", sent: 5, received: 4, rtt_avg_ms: 1.5 };
    expect(read(readHealthResources, resources)).toBe(resources);
    expect(read(readHealthInterfaces, interfaces)).toBe(interfaces);
    expect(read(readHealthPing, ping)).toBe(ping);
    // A numeric string, -0, a RouterOS boolean or an unknown key: a plain copy, the input untouched.
    expect(read(readHealthResources, { ...resources, cpu_load: "12.5" })).toEqual(resources);
    expect(read(readHealthResources, { ...resources, extra: [1] })).toEqual(resources);
    expect(Object.is(read(readHealthPing, { rtt_avg_ms: -0 })?.rtt_avg_ms, 0)).toBe(true);
    const mixed = [interfaces[0], { name: "wg0", running: "yes", note: "x" }];
    expect(read(readHealthInterfaces, mixed)).toEqual([interfaces[0], { name: "wg0", running: true }]);
    expect(mixed[1]).toEqual({ name: "wg0", running: "yes", note: "x" });
    // Plain values are held to the same rules: the cross checks, and names repeated early or late.
    expect(refusal({ resources: { memory_total: 10, memory_free: 11 } })).toBe("resources.memory_free");
    expect(refusal({ ping: { sent: 1, received: 2 } })).toBe("ping.received");
    const named = (names: string[]) => names.map((name) => ({ name, rx_bytes: 1 }));
    expect(refusal({ interfaces: named(["a", "b", "a"]) })).toBe("interfaces.2.name");
    const many = Array.from({ length: 30 }, (_, i) => `e${i}`);
    expect(refusal({ interfaces: named([...many, "e3"]) })).toBe("interfaces.30.name");
    expect(accepted({ interfaces: named(many) })?.interfaces).toHaveLength(30);
  });
});
