import { describe, expect, it } from "vitest";
import {
  addForwardRule,
  dropConnections,
  forwardTag,
  listForwardRules,
  listForwardRulesJson,
  parseJsonRules,
  parseTerseRules,
  removeForwardRule,
} from "./routeros-commands.ts";

const ID = "0b6f1c1e-1111-4222-8333-444455556666";
const valid = { tunnelIp: "100.64.0.7", port: 40001, dstAddress: "192.168.88.10", dstPort: 22, forwardId: ID };

describe("builders", () => {
  it("emit exactly the contract's command forms", () => {
    // dst-address pins the rule to the tunnel: without it the port would open on the router's WAN too.
    expect(addForwardRule(valid)).toBe(
      `/ip firewall nat add chain=dstnat protocol=tcp dst-address=100.64.0.7 dst-port=40001 action=dst-nat to-addresses=192.168.88.10 to-ports=22 comment="fleet-fwd:${ID}"`,
    );
    expect(addForwardRule({ ...valid, srcAddress: "203.0.113.0/24" })).toBe(
      `/ip firewall nat add chain=dstnat protocol=tcp dst-address=100.64.0.7 dst-port=40001 src-address=203.0.113.0/24 action=dst-nat to-addresses=192.168.88.10 to-ports=22 comment="fleet-fwd:${ID}"`,
    );
    expect(removeForwardRule(ID)).toBe(`/ip firewall nat remove [find where comment="fleet-fwd:${ID}"]`);
    expect(listForwardRules()).toBe('/ip firewall nat print terse where comment~"fleet-fwd:"');
    expect(listForwardRulesJson()).toBe(
      ':put [:serialize to=json [/ip firewall nat print as-value where comment~"^fleet-fwd:"]]',
    );
    // An exact match: `~` would be an unanchored regex, and port 4000 would also hit :40001.
    expect(dropConnections("10.20.0.5", 40001)).toBe(
      '/ip firewall connection remove [find where dst-address="10.20.0.5:40001"]',
    );
  });

  it("normalise the forward id to lower case so add and remove use the same tag", () => {
    expect(forwardTag(ID.toUpperCase())).toBe(`fleet-fwd:${ID}`);
    expect(removeForwardRule(ID.toUpperCase())).toBe(removeForwardRule(ID));
  });

  it.each([0, 65536, -1, 1.5, Number.NaN, "40001", null])("refuse port %s", (port) => {
    expect(() => addForwardRule({ ...valid, port: port as number })).toThrow(/port must be an integer/);
    expect(() => addForwardRule({ ...valid, dstPort: port as number })).toThrow(/dstPort must be an integer/);
    expect(() => dropConnections("10.0.0.1", port as number)).toThrow(/port/);
  });

  it.each(["192.168.088.10", "256.1.1.1", "1.2.3", "1.2.3.4.5", " 1.2.3.4", "1.2.3.4/24", "::1", "0x7f.0.0.1", ""])(
    "refuse address %j",
    (addr) => {
      expect(() => addForwardRule({ ...valid, dstAddress: addr })).toThrow(/dstAddress must be a canonical/);
      expect(() => addForwardRule({ ...valid, tunnelIp: addr })).toThrow(/tunnelIp must be a canonical/);
      expect(() => dropConnections(addr, 1)).toThrow(/tunnelIp/);
    },
  );

  it.each(["1.2.3.4/33", "1.2.3.4/", "1.2.3.4/8/8", "1.2.3.4/08x", "10.0.0.0/24 in-interface=ether1"])(
    "refuse srcAddress %j",
    (src) => {
      expect(() => addForwardRule({ ...valid, srcAddress: src })).toThrow(/srcAddress/);
    },
  );

  const injections = [
    `${ID}"`,
    `${ID}" ; /system reboot ; "`,
    `${ID}]`,
    `[/system reboot]`,
    `${ID}\n/system reboot`,
    `$(whoami)`,
    `${ID}$x`,
    `${ID}\\`,
    `${ID};`,
    "not-a-uuid",
    `${ID} `,
  ];
  it.each(injections)("refuse injected forward id %j", (forwardId) => {
    expect(() => addForwardRule({ ...valid, forwardId })).toThrow(/forwardId must be a UUID/);
    expect(() => removeForwardRule(forwardId)).toThrow(/forwardId must be a UUID/);
  });

  it.each(['1.2.3.4"', "1.2.3.4;", "1.2.3.4]", "1.2.3.4\n", "$ip", "1.2.3.4\\"])("refuse injected address %j", (a) => {
    expect(() => addForwardRule({ ...valid, dstAddress: a })).toThrow();
    expect(() => addForwardRule({ ...valid, tunnelIp: a })).toThrow();
    expect(() => addForwardRule({ ...valid, srcAddress: a })).toThrow();
    expect(() => dropConnections(a, 40001)).toThrow();
  });
});

describe("parseTerseRules", () => {
  it("parses enabled, disabled, quoted and foreign rules", () => {
    const output = [
      ` 0    chain=dstnat action=dst-nat to-addresses=192.168.88.10 to-ports=22 protocol=tcp dst-port=40001 log=no log-prefix="" comment=fleet-fwd:${ID}`,
      ` 1 X  chain=dstnat action=dst-nat to-addresses=192.168.88.11 to-ports=3389 protocol=tcp dst-port=40002 log=no log-prefix="" comment="fleet-fwd:aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"`,
      ` 2    chain=dstnat action=dst-nat to-addresses=10.0.0.1 protocol=tcp dst-port=80 comment="old fleet-fwd: thing \\"quoted\\""`,
      `12    chain=dstnat action=dst-nat to-addresses=10.0.0.2 to-ports=8000-8010 protocol=tcp dst-port=8000-8010 comment=fleet-fwd:${ID.replace("0b6f", "ffff")}`,
      "",
    ].join("\r\n");
    const rules = parseTerseRules(output);
    expect(rules).toHaveLength(3);
    expect(rules[0]).toMatchObject({
      index: 0,
      forwardId: ID,
      dstPort: 40001,
      toAddresses: "192.168.88.10",
      toPorts: 22,
      disabled: false,
    });
    expect(rules[0]?.raw["log-prefix"]).toBe("");
    expect(rules[1]).toMatchObject({
      index: 1,
      forwardId: "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee",
      disabled: true,
      toPorts: 3389,
    });
    expect(rules[2]?.index).toBe(12);
    expect(rules[2]?.dstPort).toBeNaN();
  });

  it("returns nothing for empty output or a flags header", () => {
    expect(parseTerseRules("")).toEqual([]);
    expect(parseTerseRules("Flags: X - disabled, I - invalid; D - dynamic \r\n")).toEqual([]);
  });
});

describe("parseJsonRules", () => {
  it("reads `:serialize to=json` of `print as-value`: strings, numbers and booleans, only exact fleet tags", () => {
    const output = JSON.stringify([
      {
        ".id": "*1",
        action: "dst-nat",
        bytes: 0,
        chain: "dstnat",
        comment: `fleet-fwd:${ID}`,
        disabled: false,
        "dst-address": "100.64.0.7",
        "dst-port": "40001",
        protocol: "tcp",
        "to-addresses": "192.168.88.10",
        "to-ports": 22,
      },
      { ".id": "*2", chain: "dstnat", comment: "not fleet-fwd:x", disabled: "false" },
      { ".id": "*3", chain: "dstnat", comment: `fleet-fwd:${ID}`, disabled: "true", "dst-port": "1-2" },
    ]);
    const rules = parseJsonRules(`${output}\r\n`);
    expect(rules).toHaveLength(2);
    expect(rules[0]).toMatchObject({ forwardId: ID, dstPort: 40001, toAddresses: "192.168.88.10", toPorts: 22 });
    expect(rules[0]?.disabled).toBe(false);
    expect(rules[0]?.raw["dst-address"]).toBe("100.64.0.7");
    expect(rules[1]?.disabled).toBe(true);
    expect(rules[1]?.dstPort).toBeNaN();
  });

  it("reads a single object, empty output, and refuses text that is not JSON", () => {
    expect(parseJsonRules(JSON.stringify({ comment: `fleet-fwd:${ID}`, "dst-port": "1" }))).toHaveLength(1);
    expect(parseJsonRules("")).toEqual([]);
    expect(parseJsonRules("[]")).toEqual([]);
    expect(() => parseJsonRules("bad command name serialize (line 1 column 8)")).toThrow(SyntaxError);
  });
});
