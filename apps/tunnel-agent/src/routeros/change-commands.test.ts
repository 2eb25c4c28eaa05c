import { describe, expect, it } from "vitest";
import {
  addGuard,
  checkForUpdates,
  guardName,
  isRouterOsVersion,
  removeGuard,
  saveBinaryBackup,
  withDoneMarker,
} from "./change-commands.ts";
import { decodePhase, encodePhase } from "../jobs/apply-change.ts";

const STEP = "0b6c6a8e-1111-4222-8333-944455556666";

describe("the commands of a fleet change's executor", () => {
  it("names the backup and the guard from the step id only", () => {
    expect(guardName(STEP)).toBe("fleet-change-0b6c6a8e111142228333944455556666");
    expect(() => guardName('x" ; /system reset-configuration')).toThrow();
  });

  it("installs a guard that loads the step's backup after guard_seconds, replacing an earlier one", () => {
    const name = guardName(STEP);
    expect(saveBinaryBackup(name)).toBe(`/system backup save name=${name} dont-encrypt=yes`);
    expect(addGuard(name, 300).split("\n")).toEqual([
      `/system scheduler remove [find name="${name}"]`,
      `/system scheduler add name="${name}" interval=300s on-event="/system backup load name=${name}.backup password=\\"\\""`,
    ]);
    expect(removeGuard(name)).toContain(`:put [:len [/system scheduler find name="${name}"]]`);
    for (const bad of [0, 86_401, 1.5, Number.NaN]) expect(() => addGuard(name, bad)).toThrow();
  });

  it("ends each step with a marker that only a complete run prints", () => {
    const { text, marker } = withDoneMarker("/ip dns set servers=1.1.1.1\n\n", "00ff00ff00ff00ff");
    expect(text).toBe('/ip dns set servers=1.1.1.1\n:put "fleet-done-00ff00ff00ff00ff"');
    expect(marker).toBe("fleet-done-00ff00ff00ff00ff");
    expect(() => withDoneMarker("x", 'a"b')).toThrow();
  });

  it("checks only the channels a change may name, and reads versions strictly", () => {
    expect(checkForUpdates("long-term")).toContain("/system package update set channel=long-term");
    expect(() => checkForUpdates("x; /system reboot" as "stable")).toThrow();
    for (const v of ["7.16.2", "7.12.2", "7.17rc3", "7.16"]) expect(isRouterOsVersion(v)).toBe(true);
    for (const v of ["", "7.16.2:x", "latest", "7.16.2 (stable)", "1".repeat(40)])
      expect(isRouterOsVersion(v)).toBe(false);
  });

  it("records phases that fit their column and read back the same", () => {
    const at = Date.UTC(2026, 10, 29, 3, 0, 0);
    for (const phase of [
      { kind: "binary" },
      { kind: "guard" },
      { kind: "script", guardAt: at },
      { kind: "ran", guardAt: at },
      { kind: "confirm", guardAt: at, doneAt: at + 1234 },
      { kind: "install", at, version: "7.16.2" },
      { kind: "reboot", at, version: "7.17rc3" },
    ] as const) {
      const text = encodePhase(phase);
      expect(text?.length ?? 0).toBeLessThanOrEqual(32);
      expect(decodePhase(text)).toEqual(phase);
    }
    expect(decodePhase(null)).toEqual({ kind: "start" });
    expect(() => decodePhase("bogus:1")).toThrow(/unknown/);
  });
});
