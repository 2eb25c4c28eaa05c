import { describe, expect, it } from "vitest";
import { effectiveRoleOf, roleOfScopes, roleRank } from "./roles.ts";

describe("roles", () => {
  it("ranks owner above admin above billing above technician above viewer", () => {
    expect(["viewer", "technician", "billing", "admin", "owner"].map((r) => roleRank(r as never))).toEqual([
      1, 2, 3, 4, 5,
    ]);
    expect(roleRank(null)).toBe(0);
  });

  it("names the highest role whose scopes a credential holds", () => {
    expect(
      roleOfScopes(new Set(["account:read", "account:write", "routers:read", "routers:write", "organizations:write"])),
    ).toBe("owner");
    expect(roleOfScopes(new Set(["routers:read", "routers:write", "account:read"]))).toBe("technician");
    expect(roleOfScopes(new Set(["account:read"]))).toBeNull();
  });

  it("takes the highest role held there or above; a team-bound one only where it is held", () => {
    expect(effectiveRoleOf([])).toBeNull();
    expect(
      effectiveRoleOf([
        { role: "viewer", teamId: null, organizationId: "x", depth: 0 },
        { role: "admin", teamId: null, organizationId: "top", depth: 2 },
      ]),
    ).toEqual({ role: "admin", teamId: null, sourceOrganizationId: "top" });
    expect(effectiveRoleOf([{ role: "owner", teamId: "t", organizationId: "top", depth: 1 }])).toBeNull();
    expect(
      effectiveRoleOf([
        { role: "technician", teamId: "t", organizationId: "x", depth: 0 },
        { role: "technician", teamId: null, organizationId: "top", depth: 1 },
      ]),
    ).toEqual({ role: "technician", teamId: null, sourceOrganizationId: "top" });
    expect(
      effectiveRoleOf([
        { role: "owner", teamId: null, organizationId: "top", depth: 3 },
        { role: "owner", teamId: null, organizationId: "mid", depth: 1 },
      ]),
    ).toEqual({ role: "owner", teamId: null, sourceOrganizationId: "mid" });
  });
});
