import { describe, expect, it } from "vitest";
import { ZCreateForwardInput } from "./forward.schema.ts";

const valid = {
  router_id: "r",
  expire_after_minutes: 60,
  dst_port: 22,
  dst_address: "192.168.88.10",
  allow_from: "8.8.8.77/24",
};

const issuesOf = (input: unknown): Record<string, string[]> => {
  const result = ZCreateForwardInput.safeParse(input);
  if (result.success) return {};
  const fields: Record<string, string[]> = {};
  for (const issue of result.error.issues) {
    const key = issue.path.join(".");
    fields[key] = [...(fields[key] ?? []), issue.message];
  }
  return fields;
};

describe("ZCreateForwardInput", () => {
  it("normalizes allow_from and keeps the rest", () => {
    expect(ZCreateForwardInput.parse(valid)).toEqual({ ...valid, allow_from: "8.8.8.0/24" });
  });

  it.each([10, 11, 1439, 1440])("accepts expire_after_minutes %d", (minutes) => {
    expect(issuesOf({ ...valid, expire_after_minutes: minutes })).toEqual({});
  });

  it.each([9, 1441, 0, -10, 10.5, "60", null, true, Number.NaN])("refuses expire_after_minutes %j", (minutes) => {
    expect(issuesOf({ ...valid, expire_after_minutes: minutes })).toEqual({
      expire_after_minutes: ["must be an integer between 10 and 1440"],
    });
  });

  it.each([1, 2, 65534, 65535])("accepts dst_port %d", (port) => {
    expect(issuesOf({ ...valid, dst_port: port })).toEqual({});
  });

  it.each([0, 65536, -1, 22.5, "22", "22 ; /system reboot"])("refuses dst_port %j", (port) => {
    expect(issuesOf({ ...valid, dst_port: port })).toEqual({ dst_port: ["must be an integer between 1 and 65535"] });
  });

  it("reports every missing field by name", () => {
    expect(Object.keys(issuesOf({ router_id: "r" })).sort()).toEqual([
      "allow_from",
      "dst_address",
      "dst_port",
      "expire_after_minutes",
    ]);
    expect(issuesOf({ router_id: "r" }).dst_port).toEqual(["is required"]);
  });

  it.each([
    ["dst_address", '192.168.88.10" ; /system reboot ; "'],
    ["dst_address", "192.168.88.10;"],
    ["dst_address", "[/system reboot]"],
    ["dst_address", "192.168.88.10\n/system reboot"],
    ["dst_address", "$(whoami)"],
    ["dst_address", "$ip"],
    ["allow_from", '8.8.8.8"'],
    ["allow_from", "8.8.8.0/24 ; /system reboot"],
    ["allow_from", "8.8.8.8]"],
    ["allow_from", "8.8.8.8\n"],
    ["allow_from", "$[:put 1]"],
  ])("refuses injection in %s: %j", (field, value) => {
    const fields = issuesOf({ ...valid, [field]: value });
    expect(Object.keys(fields)).toEqual([field]);
  });
});
