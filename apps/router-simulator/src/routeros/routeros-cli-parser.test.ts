import { offboardingCommands, WIREGUARD_OBJECTS } from "@fleet/shared";
import { describe, expect, it } from "vitest";
import { parseRouterOsCommand } from "./routeros-cli-parser.ts";

const ok = (line: string) => {
  const r = parseRouterOsCommand(line);
  if (!r.ok) throw new Error(`expected ${line} to parse, got ${r.error}`);
  return r.command;
};
const err = (line: string) => {
  const r = parseRouterOsCommand(line);
  if (r.ok) throw new Error(`expected ${line} to fail`);
  return r.error;
};

describe("parseRouterOsCommand", () => {
  it("parses add with free argument order, quoting and escapes", () => {
    expect(ok('/ip firewall nat add comment="a \\"b\\" \\\\ c\\3F" to-ports=22 chain=dstnat')).toEqual({
      kind: "nat-add",
      args: [
        ["comment", 'a "b" \\ c?'],
        ["to-ports", "22"],
        ["chain", "dstnat"],
      ],
    });
    expect(ok("/ip/firewall/nat/add chain=dstnat").kind).toBe("nat-add");
    expect(ok("ip firewall nat add chain=dstnat").kind).toBe("nat-add");
  });

  it("parses remove, print and connection remove targets", () => {
    expect(ok('/ip firewall nat remove [find where comment="fleet-fwd:x"]')).toEqual({
      kind: "nat-remove",
      target: { find: [{ key: "comment", op: "=", value: "fleet-fwd:x" }] },
    });
    expect(ok("/ip firewall nat remove *1,*A")).toEqual({ kind: "nat-remove", target: { ids: ["*1", "*A"] } });
    expect(ok('/ip firewall nat print terse where comment~"fleet-fwd:"')).toEqual({
      kind: "nat-print",
      terse: true,
      json: false,
      where: [{ key: "comment", op: "~", value: "fleet-fwd:" }],
    });
    expect(ok(':put [:serialize to=json [/ip firewall nat print as-value where comment~"^fleet-fwd:"]]')).toEqual({
      kind: "nat-print",
      terse: false,
      json: true,
      where: [{ key: "comment", op: "~", value: "^fleet-fwd:" }],
    });
    expect(ok('/ip firewall connection remove [find where dst-address~"127.0.0.12:40001"]')).toEqual({
      kind: "connection-remove",
      target: { find: [{ key: "dst-address", op: "~", value: "127.0.0.12:40001" }] },
    });
  });

  it.each([
    ["foo", "bad command name foo (line 1 column 1)"],
    ["/ip firewall filterx print", "bad command name filterx (line 1 column 14)"],
    ["/ip firewall nat add chain=dstnat bogus=1", "expected end of command (line 1 column 35)"],
    ["/ip firewall nat add chain=dstnat dstnat", "expected end of command (line 1 column 35)"],
    ["/ip firewall nat print terse foo", "expected end of command (line 1 column 30)"],
    ['/ip firewall nat add comment="unterminated', "syntax error (line 1 column 43)"],
    ["/ip firewall nat remove [find where comment=x", "syntax error (line 1 column 46)"],
    ["/ip firewall nat remove [/system reboot]", "bad command name /system (line 1 column 26)"],
    ["/ip firewall nat remove 0", "no such item"],
    ["/ip firewall nat", "expected command name (line 1 column 17)"],
  ])("answers %j like RouterOS", (line, expected) => {
    expect(err(line)).toBe(expected);
  });

  it.each([
    '/ip firewall nat add chain=dstnat comment="x"; /system reboot',
    "/ip firewall nat print; /system reboot",
    "/ip firewall nat add chain=dstnat comment=$x",
    '/ip firewall nat add chain=dstnat comment="$x"',
    '/ip firewall nat add chain=dstnat comment="a\nb"',
    "/ip firewall nat print\n/system reboot",
    ":do { /system reboot }",
    "/ip firewall nat add chain=dstnat comment=a\\b",
    "/ip firewall nat print ]",
  ])("refuses scripting %j with a syntax error", (line) => {
    expect(err(line)).toMatch(/^syntax error \(line 1 column \d+\)$/);
  });
});

describe('offboarding commands (docs/routeros.md "Offboarding")', () => {
  it("parses every command offboarding sends, and still refuses anything else in those menus", () => {
    const commands = offboardingCommands("fleet-agent");
    expect(commands.map((line) => parseRouterOsCommand(line))).toEqual([
      {
        ok: true,
        command: { kind: "nat-remove", target: { find: [{ key: "comment", op: "~", value: "^fleet-fwd:" }] } },
      },
      ...[
        ["system scheduler", "name", "fleet-heartbeat"],
        ["system script", "name", "fleet-heartbeat"],
        ["user ssh-keys", "user", "fleet-agent"],
        ["user", "name", "fleet-agent"],
        ["user group", "name", "fleet-mgmt"],
      ].map(([menu, key, value]) => ({
        ok: true,
        command: { kind: "config-remove", menu, target: { find: [{ key, op: "=", value }] } },
      })),
      {
        ok: true,
        command: {
          kind: "config-remove",
          menu: "ip firewall filter",
          target: { find: [{ key: "comment", op: "~", value: "^fleet" }] },
        },
      },
      ...[
        ["ip route", "comment", WIREGUARD_OBJECTS.comment],
        ["ip address", "comment", WIREGUARD_OBJECTS.comment],
        ["interface wireguard peers", "interface", "fleet-wg"],
        ["interface wireguard", "name", "fleet-wg"],
      ].map(([menu, key, value]) => ({
        ok: true,
        command: { kind: "config-remove", menu, target: { find: [{ key, op: "=", value }] } },
      })),
    ]);
    for (const line of [
      '/user add name="x" group=full',
      "/system scheduler print",
      "/user set admin password=x",
      "/ip address add address=100.64.0.9/32 interface=fleet-wg",
      "/ip route print",
      "/interface wireguard peers add interface=fleet-wg",
      "/interface wireguard set fleet-wg private-key=x",
      "/ip firewall filter add chain=input action=accept",
    ]) {
      expect(parseRouterOsCommand(line).ok, line).toBe(false);
    }
  });
});
