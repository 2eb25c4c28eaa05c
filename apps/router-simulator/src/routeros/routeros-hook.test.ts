import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import ssh2 from "ssh2";
import { afterAll, describe, expect, it } from "vitest";
import { routerOsHook, takeRouterOsArgs } from "./routeros-hook.ts";
import { generateEd25519KeyPair } from "@fleet/shared";

const dir = mkdtempSync(path.join(tmpdir(), "fleet-sim-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const freePort = async (host: string) => {
  const probe = net.createServer();
  probe.listen(0, host);
  await once(probe, "listening");
  const { port } = probe.address() as net.AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
};

describe("takeRouterOsArgs", () => {
  it("takes its own flags and leaves the simulator's", () => {
    const { options, rest } = takeRouterOsArgs([
      "--routers",
      "3",
      "--ssh-port",
      "2222",
      "--ssh-user",
      "mgmt",
      "--state-dir",
      "/tmp/x",
      "--quiet",
    ]);
    expect(rest).toEqual(["--routers", "3", "--quiet"]);
    expect(options).toMatchObject({ enabled: true, sshPort: 2222, sshUser: "mgmt", stateDir: "/tmp/x" });
    expect(takeRouterOsArgs(["--no-ssh"]).options.enabled).toBe(false);
  });

  it("reads --flag=value too and leaves the rest exactly as typed", () => {
    const { options, rest } = takeRouterOsArgs(["--ssh-port=2200", "--routers=2", "--no-ssh", "-h"]);
    expect(options).toMatchObject({ enabled: false, sshPort: 2200 });
    expect(rest).toEqual(["--routers=2", "-h"]);
  });

  it.each([
    ["--ssh-port", "0"],
    ["--ssh-port", "65536"],
    ["--ssh-port", "x"],
    ["--ssh-user"],
    ["--ssh-user", "--quiet"],
  ])("refuses %s %s", (...argv) => {
    expect(() => takeRouterOsArgs(argv)).toThrow(/--ssh-(port|user)/);
  });
});

describe("routerOsHook", () => {
  it("starts an SSH server on the router's tunnel_ip that keeps its host key across restarts", async () => {
    const tunnelIp = "127.0.0.91";
    const key = generateEd25519KeyPair();
    const keys = path.join(dir, "authorized_keys");
    writeFileSync(keys, `# the agent\n${key.public} fleet-tunnel-agent\n`);
    const options = {
      enabled: true,
      sshPort: await freePort(tunnelIp),
      sshUser: "mgmt",
      authorizedKeysFile: keys,
      stateDir: dir,
    };
    const fingerprints: string[] = [];
    for (let run = 0; run < 2; run++) {
      const stop = await routerOsHook(options, () => undefined)({ tunnelIp });
      expect(stop).toBeTypeOf("function");
      const conn = new ssh2.Client();
      const fingerprint = new Promise<string>((resolve, reject) => {
        conn.on("error", reject);
        conn.on("ready", () => resolve("ready"));
        conn.connect({
          host: tunnelIp,
          port: options.sshPort,
          username: "mgmt",
          privateKey: key.private,
          hostVerifier: (hostKey: Buffer) => {
            fingerprints.push(hostKey.toString("base64"));
            return true;
          },
        });
      });
      expect(await fingerprint).toBe("ready");
      conn.end();
      await stop?.();
    }
    expect(fingerprints[0]).toBe(fingerprints[1]);
  });

  it("reports a port it cannot bind once and keeps going without SSH", async () => {
    const lines: string[] = [];
    const blocker = net.createServer();
    blocker.listen(0, "127.0.0.92");
    await once(blocker, "listening");
    const port = (blocker.address() as net.AddressInfo).port;
    try {
      const hook = routerOsHook(
        { enabled: true, sshPort: port, sshUser: undefined, authorizedKeysFile: undefined, stateDir: dir },
        (l) => lines.push(l),
      );
      expect(await hook({ tunnelIp: "127.0.0.92" })).toBeUndefined();
      expect(await hook({ tunnelIp: "127.0.0.92" })).toBeUndefined();
      expect(lines).toHaveLength(1);
      // Names the address; the cause is usually EADDRINUSE (under a busy suite it can be a timeout).
      expect(lines[0]).toContain(`127.0.0.92:${port}`);
      expect(lines[0]).toMatch(/unavailable/);
      expect(
        await routerOsHook({ ...takeRouterOsArgs(["--no-ssh"]).options }, () => undefined)({ tunnelIp: "127.0.0.93" }),
      ).toBeUndefined();
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  });
});
