import { describe, expect, it } from "vitest";
import { normalizeOemKey, oemLookupKeys } from "./oem-match.ts";

describe("normalizeOemKey", () => {
  it.each([
    ["hAP ax^3", "hapax3"],
    ["hAP ax³", "hapax3"],
    ["  HAP  AX3 ", "hapax3"],
    ["hap-ax_3", "hapax3"],
    ["RB5009UG+S+", "rb5009ug+s+"],
    ["CCR2004-1G-12S+2XS", "ccr20041g12s+2xs"],
    ["RB750Gr3", "rb750gr3"],
    ["", ""],
  ])("%j -> %j", (raw, key) => {
    expect(normalizeOemKey(raw)).toBe(key);
  });

  it("keeps '+' so model codes that differ only by it stay apart", () => {
    expect(normalizeOemKey("RB5009UG+S+")).not.toBe(normalizeOemKey("RB5009UGS"));
  });
});

describe("oemLookupKeys", () => {
  it("puts the model before the board name and drops duplicates and blanks", () => {
    expect(oemLookupKeys("RB750Gr3", "hEX")).toEqual(["rb750gr3", "hex"]);
    expect(oemLookupKeys("CCR2116-12G-4S+", "ccr2116 12g 4s+")).toEqual(["ccr211612g4s+"]);
    expect(oemLookupKeys("", "hEX")).toEqual(["hex"]);
    expect(oemLookupKeys(null, undefined)).toEqual([]);
    expect(oemLookupKeys("   ", "")).toEqual([]);
  });

  it("falls back to the CHR entry for virtual board names", () => {
    expect(oemLookupKeys("", "CHR QEMU Standard PC (i440FX + PIIX, 1996)")).toEqual([
      "chrqemustandardpc(i440fx+piix,1996)",
      "chr",
    ]);
    expect(oemLookupKeys("CHR", "CHR")).toEqual(["chr"]);
    expect(oemLookupKeys("x86", "CHR VMware Virtual Platform")).toEqual(["x86", "chrvmwarevirtualplatform", "chr"]);
    // "Chateau" starts with "ch" but is hardware.
    expect(oemLookupKeys("Chateau LTE12", "")).toEqual(["chateaulte12"]);
  });
});
