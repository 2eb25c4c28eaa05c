import { describe, expect, it } from "vitest";
import { ChangePlaceholderError, renderChangeScript, unknownChangePlaceholders } from "./change-script.ts";
import { readRouterOsString } from "./routeros-script.ts";

const vars = (overrides: Partial<Parameters<typeof renderChangeScript>[1]> = {}) => ({
  identity: "gw-1",
  name: "Branch 1",
  tunnel_ip: "100.64.0.7",
  metadata: { site: "paris", floor: 3 },
  ...overrides,
});

// Values routers and tenants control, each an attempt to leave its string.
const HOSTILE = [
  'x" ; /system reset-configuration',
  "x\n/system reboot",
  "x\r\n/user add name=evil",
  "$evil",
  "[/system reboot]",
  "a;b",
  "\\",
  '\\"',
  "?",
  "{ :put 1 }",
  "# not a comment",
  "é ☃ \u0000 \u001b",
];

describe("renderChangeScript", () => {
  it("fills every placeholder with a RouterOS string literal", () => {
    const script = renderChangeScript(
      "/system identity set name={{identity}}\n:put {{ name }} ; :put {{tunnel_ip}} ; :put {{metadata.site}}{{metadata.floor}}{{metadata.none}}",
      vars(),
    );
    expect(script).toBe('/system identity set name="gw-1"\n:put "Branch 1" ; :put "100.64.0.7" ; :put "paris""3"""');
  });

  it.each(HOSTILE)("a hostile value %j stays one string that reads back as itself", (value) => {
    const script = renderChangeScript("/system identity set name={{identity}}", vars({ identity: value }));
    const start = script.indexOf('"');
    const literal = readRouterOsString(script, start);
    expect(literal.value).toBe(value);
    expect(literal.end).toBe(script.length);
    expect(script.slice(start)).not.toMatch(/[\n\r;[\]{}]|(?<!\\)\$/);
  });

  it.each(HOSTILE)("inside a string of the template, %j stays inside it", (value) => {
    const script = renderChangeScript(
      ':log info "changing {{metadata.site}} now"',
      vars({ metadata: { site: value } }),
    );
    const literal = readRouterOsString(script, script.indexOf('"'));
    expect(literal.value).toBe(`changing ${value} now`);
    expect(literal.end).toBe(script.length);
  });

  it("a quote escaped in the template does not end the string, and a comment line's quotes count for nothing", () => {
    const script = renderChangeScript('# say "hi\n:put "a\\"{{identity}}"', vars({ identity: "b c" }));
    expect(script).toBe('# say "hi\n:put "a\\"b c"');
  });

  it("refuses unknown placeholders and names them", () => {
    expect(unknownChangePlaceholders("{{identity}} {{ serial }} {{metadata.}} {{metadata.a b}} {{serial}}")).toEqual([
      "serial",
      "metadata.",
      "metadata.a b",
    ]);
    expect(() => renderChangeScript("{{password}}", vars())).toThrow(ChangePlaceholderError);
  });

  it("reads metadata keys as own properties only", () => {
    expect(renderChangeScript(":put {{metadata.constructor}}", vars())).toBe(':put ""');
  });
});
