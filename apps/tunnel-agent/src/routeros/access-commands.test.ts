import { routerOsString } from "@fleet/shared";
import { describe, expect, it } from "vitest";
import {
  ACCESS_GROUPS,
  accessUsername,
  addAccessGroup,
  addAccessScheduler,
  addAccessUser,
  removeAccessCommands,
  setAccessGroupPolicy,
} from "./access-commands.ts";

const ID = "0a1b2c3d-1111-4222-8333-444455556666";

describe("temporary access commands", () => {
  it("groups carry exactly the contract's policies, never policy, sensitive or password", () => {
    expect(ACCESS_GROUPS.read.policy).toBe("read,winbox,ssh,web,test");
    expect(ACCESS_GROUPS.full.policy).toBe("read,winbox,ssh,web,test,write,reboot");
    for (const group of Object.values(ACCESS_GROUPS)) {
      expect(group.policy.split(",")).not.toContain("policy");
      expect(group.policy.split(",")).not.toContain("sensitive");
      expect(group.policy.split(",")).not.toContain("password");
    }
    expect(addAccessGroup("read")).toBe(
      '/user group add name="fleet-read" policy="read,winbox,ssh,web,test" comment="fleet temporary access"',
    );
    expect(setAccessGroupPolicy("full")).toBe(
      '/user group set [find where name="fleet-full"] policy="read,winbox,ssh,web,test,write,reboot"',
    );
  });

  it("the user is fleet-tmp-<short id>, allowed only from the entry point's tunnel source", () => {
    expect(accessUsername(ID)).toBe("fleet-tmp-0a1b2c3d");
    expect(
      addAccessUser({ accessId: ID, level: "read", password: "Abc123Abc123Abc123", allowedAddress: "127.0.0.1" }),
    ).toBe(
      `/user add name="fleet-tmp-0a1b2c3d" group="fleet-read" password="Abc123Abc123Abc123" address="127.0.0.1" comment="fleet-access:${ID}"`,
    );
  });

  it("the router-side scheduler removes the user and itself; its script is escaped like the adoption script's", () => {
    const onEvent = routerOsString(removeAccessCommands(ID).join("; "));
    expect(addAccessScheduler(ID, 15 * 60_000)).toBe(
      `/system scheduler add name="fleet-tmp-0a1b2c3d" interval=900s on-event=${onEvent} policy="read,write,policy,test" comment="fleet-access:${ID}"`,
    );
    // Brackets and semicolons inside the script are written as \XX: the line stays one command wherever it is pasted.
    expect(onEvent).toContain('\\5Bfind where name=\\"fleet-tmp-0a1b2c3d\\"\\5D\\3B');
    expect(removeAccessCommands(ID)).toEqual([
      '/user active request-logout [find where name="fleet-tmp-0a1b2c3d"]',
      '/user remove [find where name="fleet-tmp-0a1b2c3d"]',
      '/system scheduler remove [find where name="fleet-tmp-0a1b2c3d"]',
    ]);
  });

  it("refuses anything that is not what it builds from", () => {
    expect(() => accessUsername('x"; /system reset')).toThrow();
    expect(() =>
      addAccessUser({ accessId: ID, level: "read", password: 'a"$b[c]', allowedAddress: "127.0.0.1" }),
    ).toThrow(/password/);
    expect(() =>
      addAccessUser({ accessId: ID, level: "read", password: "Abc123Abc123Abc123", allowedAddress: "1.2.3.4; x" }),
    ).toThrow(/allowedAddress/);
    expect(() => addAccessScheduler("nope", 60_000)).toThrow();
  });
});
