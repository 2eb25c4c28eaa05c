import { describe, expect, it } from "vitest";
import {
  CHANGE_RENDERED_SCRIPT_BYTES,
  ChangePlaceholderError,
  changeTemplateProblems,
  renderChangeScript,
  unknownChangePlaceholders,
} from "./change-script.ts";
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
  "tab\there\rcr\u2028ls\u2029ps\u0085nel",
  '\\\\"\\',
  `${"\\$[".repeat(2000)}]`,
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

// Issue 39 "Bad input and attackers": templates that try to put a value where it is not a string.
describe("renderChangeScript against hostile templates", () => {
  const evil = 'x"; /system reset-configuration; :put "';

  it("refuses a placeholder right after a string's backslash: the value would end the string", () => {
    // `"\{{identity}}"` rendered as the literal's body would give `"\\"; /system reset-...`.
    for (const template of [':put "\\{{identity}}"', ':put "a\\{{ name }}b"']) {
      expect(changeTemplateProblems(template)).toHaveLength(1);
      expect(() => renderChangeScript(template, vars({ identity: evil, name: evil }))).toThrow(ChangePlaceholderError);
    }
    // An escaped backslash before it is only a backslash: the placeholder is in the string.
    const script = renderChangeScript(':put "a\\\\{{identity}}"', vars({ identity: evil }));
    expect(readRouterOsString(script, script.indexOf('"')).value).toBe(`a\\${evil}`);
  });

  it("refuses a placeholder right after $: the value would name the variable to read", () => {
    const dollar = "$";
    for (const template of [
      `:put ${dollar}{{identity}}`,
      `:put "${dollar}{{identity}}"`,
      `:put "${dollar}a{{identity}}"`,
      `:put ${dollar}my_var{{identity}}`,
    ]) {
      expect(() => renderChangeScript(template, vars())).toThrow(ChangePlaceholderError);
    }
    expect(changeTemplateProblems(`:put "\\${dollar}{{identity}}"`)).toEqual([]);
    expect(changeTemplateProblems(`:put "\\${dollar}a{{identity}}"`)).toEqual([]);
    expect(changeTemplateProblems(`:put "${dollar}a {{identity}}"`)).toEqual([]);
  });

  it("a placeholder inside $[...] or $(...) of a string is a whole literal there, not a string's body", () => {
    for (const [template, open] of [
      [':put "id $[/system identity get {{identity}}] end"', "get "],
      [':put "sum $({{identity}} . "x") end"', "$("],
      [':put "$[:put [:len {{identity}}]] end"', ":len "],
    ] as const) {
      const script = renderChangeScript(template, vars({ identity: evil }));
      const start = script.indexOf(open) + open.length;
      const literal = readRouterOsString(script, start);
      expect(literal.value).toBe(evil);
    }
  });

  it("nested and spaced braces: {{{identity}}} is a literal in braces, {{ identity }} is identity", () => {
    expect(renderChangeScript(":put {{{identity}}}", vars({ identity: evil }))).toBe(
      ':put {"x\\"\\3B /system reset-configuration\\3B :put \\""}',
    );
    expect(renderChangeScript(":put {{ identity }}", vars())).toBe(':put "gw-1"');
    expect(unknownChangePlaceholders("{{{{identity}}}} {{}} {{ }} {{metadata.a.b}} {{metadata.ü}}")).toEqual([
      "",
      "metadata.a.b",
      "metadata.ü",
    ]);
    // Unbalanced braces are left as written; only whole placeholders are replaced.
    expect(renderChangeScript(":put {{identity} {identity}}", vars())).toBe(":put {{identity} {identity}}");
  });

  it("a value of any length reads back as itself; a rendered script over the limit is refused", () => {
    const long = "é;\n".repeat(10_000);
    const script = renderChangeScript(":put {{identity}}", vars({ identity: long }));
    expect(readRouterOsString(script, 5)).toEqual({ value: long, end: script.length });
    const many = ":put {{identity}}\n".repeat(2000);
    const big = "a".repeat(Math.ceil(CHANGE_RENDERED_SCRIPT_BYTES / 2000));
    expect(() => renderChangeScript(many, vars({ identity: big }))).toThrow(ChangePlaceholderError);
    expect(() => renderChangeScript(":put {{identity}}", vars({ identity: "\ud800" }))).toThrow(ChangePlaceholderError);
  });
});
