import { describe, expect, it } from "vitest";
import { adoptionScript, type AdoptionScriptInput } from "./adoption-script.ts";
import {
  command,
  readRouterOsString,
  RouterOsScriptError,
  renderRouterOsScript,
  routerOsDuration,
  routerOsString,
  str,
  word,
} from "./routeros-script.ts";

const HOSTILE = [
  'quote " inside',
  "backslash \\ and \\\\ and \\n literally",
  "$var $(expr) $[cmd]",
  "?help",
  "[/system reboot]",
  "a; /user remove 0",
  "line\nbreak\r\nand\ttab",
  "control \u0000 \u0001 \u001f \u007f",
  "Zürich ✓ 東京 🚀",
  "#not a comment {block} `tick`",
  "\\5B looks like an escape",
  "",
];

describe("routerOsString", () => {
  it.each(HOSTILE)("reads back %j exactly and holds only safe printable ASCII", (value) => {
    const literal = routerOsString(value);
    expect(literal).toMatch(/^"[\x20-\x7e]*"$/);
    // Nothing RouterOS would act on survives unescaped: every $, ?, " and newline is behind a backslash.
    expect(literal.slice(1, -1).replace(/\\./g, "")).not.toMatch(/["$?[\]{};#\n\r]/);
    expect(readRouterOsString(literal, 0)).toEqual({ value, end: literal.length });
  });

  it("uses the named escapes RouterOS documents and \\XX with capital hex for the rest", () => {
    expect(routerOsString('a"b\\c$d?e\nf\rg\th')).toBe('"a\\"b\\\\c\\$d\\?e\\nf\\rg\\th"');
    expect(routerOsString("é[\u0001")).toBe('"\\C3\\A9\\5B\\01"');
  });

  it("refuses a lone surrogate, which has no UTF-8 bytes", () => {
    expect(() => routerOsString("a\uD800b")).toThrow(RouterOsScriptError);
    expect(routerOsString("🚀")).toBe('"\\F0\\9F\\9A\\80"');
  });
});

describe("the model refuses what is not one token", () => {
  it.each([
    () => word("30s; /system reboot"),
    () => word("$x"),
    () => command("system scheduler", "add;"),
    () => command("system/scheduler", "add"),
    () => command("system scheduler", "add", { "name=x": str("y") }),
    () => routerOsDuration(0),
  ])("throws for case %#", (build) => {
    expect(build).toThrow(RouterOsScriptError);
  });

  it("renders durations as RouterOS writes them", () => {
    expect(renderRouterOsScript([command("system scheduler", "set", { interval: routerOsDuration(30_000) })])).toBe(
      "/system scheduler set interval=30s\n",
    );
    expect(renderRouterOsScript([command("system scheduler", "set", { interval: routerOsDuration(250) })])).toBe(
      "/system scheduler set interval=250ms\n",
    );
  });
});

const INPUT: AdoptionScriptInput = {
  routerId: "0b6c6a8e-1111-4222-8333-944455556666",
  routerName: "Office",
  heartbeatUrl: "http://127.0.0.1:3001/v1/heartbeat",
  heartbeatToken: "hb_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG",
  intervalMs: 30_000,
  sshUser: "mgmt",
  tunnelNetwork: "100.64.0.0/10",
  agentPublicKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDYeZNA+HjieFBDz17CWpDwutIsZCeFyYXXjuMhRZVgK",
};

describe("adoptionScript", () => {
  it("checks device-mode before it changes anything, and removes its own objects before adding them", () => {
    const lines = adoptionScript(INPUT).split("\n");
    const first = (prefix: string) => lines.findIndex((l) => l.startsWith(prefix));
    expect(first(":if ([/system device-mode get fetch] != true)")).toBeLessThan(first("/system scheduler remove"));
    expect(first(":if ([/system device-mode get scheduler] != true)")).toBeLessThan(first("/system scheduler remove"));
    expect(first("/user ssh-keys remove")).toBeLessThan(first("/user remove"));
    expect(first("/user remove")).toBeLessThan(first("/user group remove"));
    expect(first("/user group remove")).toBeLessThan(first("/user group add"));
    expect(first("/system scheduler add")).toBeLessThan(first("/system script run"));
    expect(lines.filter((l) => l.startsWith("/system script run"))).toEqual(['/system script run "fleet-heartbeat"']);
  });

  it.each(HOSTILE.filter((name) => name !== ""))("keeps the router name %j inside its string", (routerName) => {
    const script = adoptionScript({ ...INPUT, routerName });
    const line = script.split("\n").find((l) => l.startsWith(":log info ")) ?? "";
    const read = readRouterOsString(line, ":log info ".length);
    expect(read.end).toBe(line.length);
    expect(read.value).toBe(`fleet adoption of router ${routerName} (${INPUT.routerId})`);
  });

  it.each([
    { heartbeatToken: 'hb_x" ; /system reset-configuration' },
    { sshUser: "admin; /user remove 0" },
    { tunnelNetwork: "0.0.0.0/0 ; x" },
    { agentPublicKey: "ssh-ed25519 AAAA\n/system reboot" },
    { heartbeatUrl: "http://user:pass@example.com" },
    { heartbeatUrl: "ftp://example.com" },
    { intervalMs: 0 },
  ])("refuses a value that does not have the shape it must have: %j", (bad) => {
    expect(() => adoptionScript({ ...INPUT, ...bad })).toThrow(RouterOsScriptError);
  });
});
