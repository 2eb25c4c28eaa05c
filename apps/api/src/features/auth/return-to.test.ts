import { describe, expect, it } from "vitest";
import { DEFAULT_RETURN_TO, safeReturnTo } from "./return-to.ts";

describe('return_to (docs/api.md "Sign-in")', () => {
  it.each([
    "/console",
    "/console/",
    "/console/routers/abc",
    "/console/routers?q=a%20b#faults",
    "/console/invitations/tok_1",
  ])("keeps the console path %s", (path) => {
    expect(safeReturnTo(path)).toBe(path);
  });

  it.each([
    undefined,
    42,
    "",
    "console/",
    "/",
    "/consolex",
    "/api/routers",
    "https://evil.example/console/",
    "http:/evil.example",
    "//evil.example/console/",
    "///evil.example",
    "/\\evil.example",
    "/console\\..\\evil",
    "/%2F%2Fevil.example",
    "/%5Cevil.example",
    "/console/%2F%2Fevil.example",
    "/console//evil.example",
    "/console/..%2F..%2Fevil",
    "/console/%252e%252e/%252e%252e/x",
    "/console/../api",
    "/console/%0d%0aSet-Cookie:x=y",
    "/console/\u0000",
    "/console/ x",
    `/console/${"a".repeat(1000)}`,
  ])("replaces %j with /console/", (value) => {
    expect(safeReturnTo(value)).toBe(DEFAULT_RETURN_TO);
  });

  it("takes paths up to 1000 characters", () => {
    const longest = `/console/${"a".repeat(1000 - "/console/".length)}`;
    expect(safeReturnTo(longest)).toBe(longest);
    expect(safeReturnTo(`${longest}a`)).toBe(DEFAULT_RETURN_TO);
  });
});
