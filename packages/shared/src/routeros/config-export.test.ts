import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { digestConfigExport, normalizeConfigExport } from "./config-export.ts";

describe("configuration exports", () => {
  it("compare equal whatever their dated first line and line ends", () => {
    const a = "# 2026-11-25 10:50:00 by RouterOS 7.16.2\r\n# software id = X\r\n/system identity\r\nset name=A\r\n";
    const b = "# 2026-11-26 03:00:01 by RouterOS 7.16.2\n# software id = X\n/system identity\nset name=A\n";
    const old = "# nov/26/2026 03:00:01 by RouterOS 6.49.10\n# software id = X\n/system identity\nset name=A\n";
    expect(digestConfigExport(a).normalizedSha256).toBe(digestConfigExport(b).normalizedSha256);
    expect(digestConfigExport(a).normalizedSha256).toBe(digestConfigExport(old).normalizedSha256);
    // `sha256` is the hash of the text as read and served, dated line included.
    expect(digestConfigExport(a).sha256).toBe(createHash("sha256").update(Buffer.from(a, "utf8")).digest("hex"));
    expect(digestConfigExport(a).sha256).not.toBe(digestConfigExport(b).sha256);
    expect(normalizeConfigExport(b)).toBe("# software id = X\n/system identity\nset name=A\n");
    expect(digestConfigExport(a)).toMatchObject({ lines: 4, bytes: Buffer.byteLength(a) });
  });

  it("differ on any other change, a comment further down included", () => {
    const base = "# 2026-11-25 10:50:00 by RouterOS 7.16.2\n/system identity\nset name=A\n";
    expect(digestConfigExport(base).normalizedSha256).not.toBe(
      digestConfigExport(base.replace("name=A", "name=B")).normalizedSha256,
    );
    const noHeader = "/system identity\nset name=A\n";
    // Only a first line that is RouterOS's dated header is dropped.
    expect(normalizeConfigExport(noHeader)).toBe(noHeader);
    expect(normalizeConfigExport(`${noHeader}# 2026-11-25 10:50:00 by RouterOS 7.16.2\n`)).toContain("by RouterOS");
    expect(digestConfigExport("").lines).toBe(0);
  });
});
