import { describe, expect, it } from "vitest";
import { isUuid } from "./uuid.ts";

describe("isUuid", () => {
  it("accepts UUIDs of any version and case", () => {
    expect(isUuid(crypto.randomUUID())).toBe(true);
    expect(isUuid("6F9619FF-8B86-D011-B42D-00C04FC964FF")).toBe(true);
    expect(isUuid("00000000-0000-0000-0000-000000000000")).toBe(true);
  });

  it("refuses anything else", () => {
    for (const value of [
      "",
      "nope",
      "6f9619ff-8b86-d011-b42d-00c04fc964f",
      "6f9619ff-8b86-d011-b42d-00c04fc964ffa",
      "6f9619ff8b86d011b42d00c04fc964ff",
      "6f9619ff-8b86-d011-b42d-00c04fc964fg",
      " 6f9619ff-8b86-d011-b42d-00c04fc964ff",
      "6f9619ff-8b86-d011-b42d-00c04fc964ff\n",
      42,
      null,
      undefined,
    ]) {
      expect(isUuid(value)).toBe(false);
    }
  });
});
