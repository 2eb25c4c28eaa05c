import { readFileSync } from "node:fs";
import path from "node:path";
import { SECRET_VARIABLES } from "@fleet/shared";
import { describe, expect, it } from "vitest";
import { configurationTable, ENV_EXAMPLE, renderEnvExample } from "../../scripts/env-example.ts";

/** docs/operations.md "Configuration": `.env.example` is generated from the one configuration table. */
const root = path.resolve(import.meta.dirname, "../..");
const docs = readFileSync(path.join(root, "docs", "operations.md"), "utf8");

describe(".env.example", () => {
  it("is what `npm run env:example` generates from the configuration table now", () => {
    expect(readFileSync(ENV_EXAMPLE, "utf8")).toBe(renderEnvExample(docs, SECRET_VARIABLES));
  });

  it("lists every variable of the table, and each secret with its _FILE form", () => {
    const text = readFileSync(ENV_EXAMPLE, "utf8");
    const names = configurationTable(docs).flatMap((row) => row.names);
    expect(names.length).toBeGreaterThan(40);
    for (const name of names) expect(text, name).toContain(`\n#${name}=\n`);
    for (const secret of SECRET_VARIABLES) {
      expect(names, secret).toContain(secret);
      expect(text, secret).toContain(`# secret: or ${secret}_FILE=`);
    }
  });

  it("notices a row added to the table", () => {
    const added = docs.replace("| `HOST` |", "| `NEW_SETTING` | `1` | api | new |\n| `HOST` |");
    expect(renderEnvExample(added, SECRET_VARIABLES)).toContain("#NEW_SETTING=");
    expect(renderEnvExample(added, SECRET_VARIABLES)).not.toBe(readFileSync(ENV_EXAMPLE, "utf8"));
  });
});
