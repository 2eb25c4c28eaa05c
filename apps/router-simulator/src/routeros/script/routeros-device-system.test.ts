import { eventually } from "@fleet/shared/testing";
import { describe, expect, it } from "vitest";
import { type HttpRequest, RouterOsDevice } from "./routeros-device.ts";
import type { RouterOsSystemOptions } from "./routeros-device-system.ts";

/** A device as an adopted router runs it: RouterOS 7.15.1, reboots that last 50 ms. */
const device = (system: RouterOsSystemOptions = {}) => {
  const requests: HttpRequest[] = [];
  const d = new RouterOsDevice({
    identity: "edge-1",
    version: "7.15.1 (stable)",
    boardName: "RB5009UG+S+",
    model: "RB5009UG+S+",
    routerboard: true,
    serialNumber: "HE708ABCDEF",
    licenseId: "AB12-CD34",
    bootedAt: Date.now() - 3_600_000,
    system: { rebootSeconds: 0.05, ...system },
    http: async (request) => {
      requests.push(request);
      return { status: 200, body: "" };
    },
  });
  return { d, requests };
};

const put = async (d: RouterOsDevice, expression: string) => d.system.runRemote(`:put ${expression}`);

describe("fleet change commands on a simulated RouterOS device", () => {
  it("prints with :put and waits with :delay", async () => {
    const { d } = device();
    expect(await d.system.runRemote(':put "one"\n:delay 10ms\n:put "two"')).toBe("one\r\ntwo");
    expect(await d.system.runRemote(":delay nonsense")).toMatch(/bad time interval/);
  });

  it("sets identity, note, DNS and NTP", async () => {
    const { d } = device();
    const out = await d.system.runRemote(
      [
        "/system identity set name=core-2",
        '/system note set note="maintained by fleet"',
        "/ip dns set servers=1.1.1.1,9.9.9.9 allow-remote-requests=no",
        "/system ntp client set enabled=yes servers=pool.ntp.org",
        ":put [/system identity get name]",
        ":put [/ip dns get servers]",
        ":put [/system ntp client get servers]",
        ":put [/system note get note]",
      ].join("\n"),
    );
    expect(out).toBe("core-2\r\n1.1.1.1,9.9.9.9\r\npool.ntp.org\r\nmaintained by fleet");
    expect(d.identity).toBe("core-2");
    expect(await d.system.runRemote("/ip dns set bogus=1")).toMatch(/has no bogus/);
    expect(await d.system.runRemote('/system identity set name=""')).toMatch(/name must be set/);
  });

  it("adds and removes firewall filter rules", async () => {
    const { d } = device();
    await d.system.runRemote(
      '/ip firewall filter add chain=input action=drop protocol=tcp dst-port=23 comment="no telnet"',
    );
    expect(d.tables["ip firewall filter"].map((r) => r.props.comment)).toEqual(["no telnet"]);
    expect(await d.system.runRemote('/ip firewall filter remove [find comment="no telnet"]')).toBe("");
    expect(d.tables["ip firewall filter"]).toEqual([]);
  });

  it("answers RouterOS's own error to a command it does not know, and runs nothing of that script", async () => {
    const { d } = device();
    const out = await d.system.runRemote("/system identity set name=x\n/interface bridge add name=br1");
    expect(out).toMatch(/^bad command name bridge \(line 2 column \d+\)$/);
    expect(d.identity).toBe("edge-1");
  });

  it("exports the settings a script changed, and none at their defaults", async () => {
    const { d } = device();
    expect(d.system.exportLines()).toEqual([]);
    await d.system.runRemote('/ip dns set servers=9.9.9.9,1.1.1.1\n/system note set note="on \\"edge\\" 1"');
    expect(d.system.exportLines()).toEqual([
      "/ip dns",
      "set servers=9.9.9.9,1.1.1.1",
      "/system note",
      'set note="on \\"edge\\" 1"',
    ]);
    await d.system.runRemote('/ip dns set servers=""\n/system note set note=""');
    expect(d.system.exportLines()).toEqual([]);
  });

  it("stops a script at the first failing command", async () => {
    const { d } = device();
    const out = await d.system.runRemote(':put "before"\n/system backup load name=missing\n:put "after"');
    expect(out).toBe("before\r\nfailure: no such file missing.backup (line 2)");
  });

  it("restores the configuration a binary backup saved, after a reboot", async () => {
    const { d } = device();
    await d.system.runRemote(
      "/system backup save name=before dont-encrypt=yes\n/system identity set name=changed\n/ip dns set servers=8.8.8.8\n/ip firewall filter add chain=input action=drop",
    );
    expect(d.tables.file.map((f) => f.props.name)).toContain("before.backup");
    expect(await d.system.runRemote("/system backup load name=before.backup")).toBe("");
    expect(d.system.reachable).toBe(false);
    await eventually(() => d.system.boots === 1, "the reboot");
    expect(d.system.reachable).toBe(true);
    expect(d.identity).toBe("edge-1");
    expect(d.system.settings().dns.servers).toBe("");
    expect(d.tables["ip firewall filter"]).toEqual([]);
    // The backup is a file on flash: it outlives the restore.
    expect(d.tables.file.map((f) => f.props.name)).toContain("before.backup");
  });

  it("fires a scheduler after its interval, and a removed one never", async () => {
    const { d } = device();
    await d.system.runRemote('/system scheduler add name=soon interval=50ms on-event="/system note set note=fired"');
    await d.system.runRemote(
      '/system scheduler add name=gone interval=50ms on-event="/system identity set name=never"',
    );
    await d.system.runRemote('/system scheduler remove [find name="gone"]');
    await eventually(() => d.system.settings().note.note === "fired", "the scheduler");
    expect(d.identity).toBe("edge-1");
    d.stop();
  });

  it("fires a scheduler once at its start-time", async () => {
    const { d } = device();
    const at = new Date(Date.now() + 1500).toISOString().slice(11, 19);
    await d.system.runRemote(
      `/system scheduler add name=once start-time=${at} on-event="/system note set note=at-time"`,
    );
    await eventually(() => d.system.settings().note.note === "at-time", "the scheduler at its time");
  });

  it("a guard scheduler that loads a backup reverts the change it was set up for", async () => {
    const { d } = device();
    await d.system.runRemote(
      '/system backup save name=guard dont-encrypt=yes\n/system scheduler add name=guard interval=50ms on-event="/system backup load name=guard.backup"\n/system identity set name=broken',
    );
    await eventually(() => d.system.boots === 1, "the reboot");
    expect(d.identity).toBe("edge-1");
    expect(d.tables["system scheduler"]).toEqual([]);
  });

  it("updates from a channel: check, download, install reboots into the new version", async () => {
    const { d } = device();
    expect(await put(d, "[/system package update get installed-version]")).toBe("7.15.1");
    await d.system.runRemote("/system package update check-for-updates");
    expect(await put(d, "[/system package update get latest-version]")).toBe("7.16.2");
    await d.system.runRemote("/system package update download");
    await d.system.runRemote("/system package update install");
    expect(d.system.rebooting).toBe(true);
    await eventually(() => d.system.boots === 1, "the reboot");
    expect(d.version).toBe("7.16.2 (stable)");
    expect(await put(d, "[/system resource get version]")).toBe("7.16.2 (stable)");
  });

  it("offers 7.12.2 on long-term and refuses a channel that does not exist", async () => {
    const { d } = device();
    await d.system.runRemote("/system package update set channel=long-term\n/system package update check-for-updates");
    expect(await put(d, "[/system package update get latest-version]")).toBe("7.12.2");
    expect(await d.system.runRemote("/system package update set channel=nightly")).toMatch(/invalid value/);
    await d.system.runRemote("/system package update install");
    await eventually(() => d.version === "7.12.2 (long-term)", "the install");
  });

  it("/system reboot: offline meanwhile (no SSH, no fetch), back with its configuration and a new uptime", async () => {
    const { d, requests } = device({ rebootSeconds: 0.2 });
    const before = d.bootedAt;
    await d.system.runRemote("/system identity set name=kept\n/system reboot");
    expect(d.system.reachable).toBe(false);
    expect(await d.system.runRemote('/tool fetch url="http://127.0.0.1:9/x" output=none')).toMatch(/connection failed/);
    expect(requests).toEqual([]);
    await eventually(() => d.system.boots === 1, "the reboot");
    expect(d.identity).toBe("kept");
    expect(d.bootedAt).toBeGreaterThan(before);
  });

  it("--break-tunnel-on-change: the next changing script cuts the tunnel until a backup is loaded", async () => {
    const { d } = device({ breakTunnelOnChange: true });
    // Reading, saving a backup and adding a scheduler change nothing a change is about.
    await d.system.runRemote(":put [/system identity get name]\n/system backup save name=g dont-encrypt=yes");
    await d.system.runRemote('/system scheduler add name=g interval=1h on-event="/system backup load name=g.backup"');
    expect(d.system.reachable).toBe(true);
    expect(await d.system.runRemote('/ip dns set servers=10.0.0.1\n:put "done"')).toBe("done");
    expect(d.system.tunnelBroken).toBe(true);
    expect(d.system.reachable).toBe(false);
    await d.system.runRemote("/system backup load name=g.backup");
    await eventually(() => d.system.boots === 1, "the reboot");
    expect(d.system.reachable).toBe(true);
    expect(d.system.settings().dns.servers).toBe("");
    // Once only: the next change keeps the tunnel.
    await d.system.runRemote("/ip dns set servers=10.0.0.2");
    expect(d.system.reachable).toBe(true);
  });
});
