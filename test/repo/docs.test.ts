import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

/**
 * The repository carries its own docs and points nowhere outside itself (docs/contributing.md
 * "Naming"): a clone must be complete. Checked over every tracked file, so nothing can slip in.
 */
const root = path.resolve(import.meta.dirname, "../..");
const self = path.relative(root, import.meta.filename);

/**
 * Doc files other work in progress writes. A citation of one may name a file not yet merged; once
 * the file exists its headings are checked like any other. Remove entries when the files land.
 */
const PENDING_DOCS = new Set<string>();

const trackedFiles = (): string[] =>
  execFileSync("git", ["ls-files", "-z"], { cwd: root, encoding: "utf8" })
    .split("\0")
    .filter((file) => file !== "" && file !== "package-lock.json" && existsSync(path.join(root, file)));

const textOf = (file: string): string | undefined => {
  const buffer = readFileSync(path.join(root, file));
  return buffer.includes(0) ? undefined : buffer.toString("utf8");
};

// Built from parts so this file does not match itself.
const OUTSIDE = [
  { why: "a link to the shared folder beside the repository", re: new RegExp(["\\.\\.", "shared"].join("/")) },
  { why: "an absolute path on the build machine", re: new RegExp(`/${"work"}/`) },
  {
    why: "a document that lives outside the repository",
    re: new RegExp(`\\b(?:${["SPEC", "CONTRACT", "STYLE"].join("|")})\\.md\\b`),
  },
];

/** `docs/<file>.md "<Heading>"`, also `docs/<file>.md ("<Heading>")`. */
const CITATION = /\b(docs\/[a-z0-9-]+\.md)\s*\(?"([^"\n]+)"/g;
/** Markdown links `[text](target)`. */
const LINK = /\]\(([^)\s]+)\)/g;

const headingsOf = (markdown: string): Set<string> => {
  const headings = new Set<string>();
  let fenced = false;
  for (const line of markdown.split("\n")) {
    if (line.startsWith("```")) fenced = !fenced;
    const match = fenced ? null : /^#{1,6}\s+(.+?)\s*#*\s*$/.exec(line);
    if (match?.[1]) headings.add(match[1]);
  }
  return headings;
};

/** GitHub's anchor of a heading: lowercase, punctuation dropped, spaces to dashes. */
const anchorOf = (heading: string): string =>
  heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");

describe("the repository is self-contained", () => {
  const files = trackedFiles().filter((file) => file !== self);
  const texts = new Map<string, string>();
  for (const file of files) {
    const text = textOf(file);
    if (text !== undefined) texts.set(file, text);
  }

  it("no tracked file points outside the repository", () => {
    const problems: string[] = [];
    for (const [file, text] of texts) {
      text.split("\n").forEach((line, i) => {
        for (const { why, re } of OUTSIDE) if (re.test(line)) problems.push(`${file}:${i + 1}: ${why}: ${line.trim()}`);
      });
    }
    expect(problems).toEqual([]);
  });

  it("every markdown link resolves to a tracked file inside the repository", () => {
    const tracked = new Set(trackedFiles());
    const trackedDirs = new Set(
      [...tracked].flatMap((f) =>
        f
          .split("/")
          .slice(0, -1)
          .map((_, i, parts) => parts.slice(0, i + 1).join("/")),
      ),
    );
    const problems: string[] = [];
    for (const [file, text] of texts) {
      if (!file.endsWith(".md")) continue;
      for (const match of text.matchAll(LINK)) {
        const target = match[1] ?? "";
        if (/^(?:https?:|mailto:)/.test(target)) continue;
        const [filePart = "", anchor] = target.split("#");
        if (target.startsWith("/") || /^[a-z]+:/i.test(target)) {
          problems.push(`${file}: link leaves the repository: ${target}`);
          continue;
        }
        const resolved =
          filePart === ""
            ? file
            : path.posix.normalize(path.posix.join(path.posix.dirname(file), filePart)).replace(/\/$/, "");
        if (resolved.startsWith("..")) {
          problems.push(`${file}: link leaves the repository: ${target}`);
          continue;
        }
        if (!tracked.has(resolved) && !trackedDirs.has(resolved)) {
          if (!PENDING_DOCS.has(resolved)) problems.push(`${file}: link to a missing file: ${target}`);
          continue;
        }
        if (anchor && resolved.endsWith(".md")) {
          const anchors = new Set([...headingsOf(texts.get(resolved) ?? "")].map(anchorOf));
          if (!anchors.has(anchor)) problems.push(`${file}: link to a missing heading: ${target}`);
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it('every docs/<file>.md "<Heading>" citation names an existing file and heading', () => {
    const problems: string[] = [];
    let citations = 0;
    for (const [file, text] of texts) {
      for (const match of text.matchAll(CITATION)) {
        const [, doc = "", heading = ""] = match;
        citations++;
        const target = texts.get(doc);
        if (target === undefined) {
          if (!PENDING_DOCS.has(doc)) problems.push(`${file}: cites missing ${doc}`);
          continue;
        }
        if (!headingsOf(target).has(heading)) problems.push(`${file}: ${doc} has no heading "${heading}"`);
      }
    }
    expect(problems).toEqual([]);
    // The check must see the citations the code is full of, or it proves nothing.
    expect(citations).toBeGreaterThan(100);
  });

  it("the checks find what they look for", () => {
    expect(headingsOf("# A\n```\n# not\n```\n### Metric (hourly)\n")).toEqual(new Set(["A", "Metric (hourly)"]));
    expect(anchorOf('docs/operations.md "Configuration"'.split('"')[1] ?? "")).toBe("configuration");
    expect(OUTSIDE.some(({ re }) => re.test(`see ${"../"}shared/x`))).toBe(true);
    expect(OUTSIDE.some(({ re }) => re.test(`see ${"SPEC"}.md`))).toBe(true);
    expect([...`x docs/api.md ("Errors") y`.matchAll(CITATION)].map((m) => m[2])).toEqual(["Errors"]);
  });
});
