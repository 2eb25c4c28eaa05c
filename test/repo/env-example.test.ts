import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { SECRET_VARIABLES } from "@fleet/shared";
import { describe, expect, it } from "vitest";

/** docs/operations.md "Configuration": `.env.example` is generated from the one configuration table. */
const root = path.resolve(import.meta.dirname, "../..");
const docs = readFileSync(path.join(root, "docs", "operations.md"), "utf8");
const generated = () =>
  execFileSync(process.execPath, [path.join(root, "scripts/env-example.ts"), "--print"], { encoding: "utf8" });

/** Every `NAME` in the first column of the table under "## Configuration". */
const tableNames = (): string[] => {
  const section = docs.slice(docs.indexOf("\n## Configuration\n")).split(/\n## /)[1] ?? "";
  return section
    .split("\n")
    .filter((line) => line.startsWith("| `"))
    .flatMap((line) => [...(line.split(" | ")[0] ?? "").matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((m) => m[1] ?? ""));
};

describe(".env.example", () => {
  it("is what `npm run env:example` generates from the configuration table now", () => {
    expect(readFileSync(path.join(root, ".env.example"), "utf8")).toBe(generated());
  });

  it("lists every variable of the table, and each secret with its _FILE form", () => {
    const text = readFileSync(path.join(root, ".env.example"), "utf8");
    const names = tableNames();
    expect(names.length).toBeGreaterThan(40);
    for (const name of names) expect(text, name).toContain(`\n#${name}=\n`);
    for (const secret of SECRET_VARIABLES) {
      expect(names, secret).toContain(secret);
      expect(text, secret).toContain(`# secret: or ${secret}_FILE=`);
    }
  });
});
