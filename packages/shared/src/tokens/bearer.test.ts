import { describe, expect, it } from "vitest";
import { bearerToken } from "./bearer.ts";

describe("bearerToken", () => {
  it("reads the token after a case-insensitive scheme, with spaces or tabs around it", () => {
    expect(bearerToken("Bearer abc.def-ghi")).toBe("abc.def-ghi");
    expect(bearerToken("bearer abc")).toBe("abc");
    expect(bearerToken("BEARER\tabc")).toBe("abc");
    expect(bearerToken("Bearer    abc  \t")).toBe("abc");
    expect(bearerToken("Bearer fleet_key/+=")).toBe("fleet_key/+=");
  });

  it("refuses anything that is not one bearer token", () => {
    for (const header of [
      undefined,
      "",
      "Bearer",
      "Bearer ",
      "Bearer  \t ",
      "Bearerabc",
      "Basic YWxhZGRpbjpvcGVuc2VzYW1l",
      "Bearer abc def",
      " Bearer abc",
      "Token abc",
    ]) {
      expect(bearerToken(header), String(header)).toBeUndefined();
    }
  });
});
