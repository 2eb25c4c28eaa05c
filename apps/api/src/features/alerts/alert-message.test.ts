import { describe, expect, it } from "vitest";
import { escapeTeams } from "./alert-message.ts";

describe("a Teams card's text", () => {
  it("holds a router's name as written, unless it would make markup", () => {
    for (const name of ["rtr-1", "edge.example.net", "core_rtr (Paris) #2!", "a+b|c{d}"])
      expect(escapeTeams(`${name} went offline at 2026-11-30 10:45 UTC.`)).toBe(
        `${name} went offline at 2026-11-30 10:45 UTC.`,
      );
    expect(escapeTeams("[click](https://evil.example) *bold* `code` ~gone~ _em_ a\\b")).toBe(
      "\\[click\\](https://evil.example) \\*bold\\* \\`code\\` \\~gone\\~ \\_em\\_ a\\\\b",
    );
    expect(escapeTeams("<b>&")).toBe("&lt;b&gt;&amp;");
    // A name that would start a heading or a list at the start of a line.
    expect(escapeTeams("# big")).toBe("\\# big");
    expect(escapeTeams("- item")).toBe("\\- item");
    expect(escapeTeams("1. first")).toBe("1\\. first");
  });
});
