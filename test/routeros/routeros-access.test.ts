import { once } from "node:events";
import net from "node:net";
import { type RouterOsSshServer, startRouterOsSshServer } from "@fleet/router-simulator/routeros/routeros-ssh-server";
import { generateEd25519KeyPair } from "@fleet/shared";
import { eventually } from "@fleet/shared/testing";
import {
  addAccessGroup,
  addAccessScheduler,
  addAccessUser,
  removeAccessCommands,
  setAccessGroupPolicy,
} from "@fleet/tunnel-agent/routeros/access-commands";
import { InMemoryHostKeyStore } from "@fleet/tunnel-agent/routeros/host-key-store";
import type { RouterOsClient } from "@fleet/tunnel-agent/routeros/routeros-client";
import { SshRouterOsConnector } from "@fleet/tunnel-agent/routeros/ssh-routeros-client";
import ssh2 from "ssh2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/**
 * The simulator learns temporary router access (docs/routeros.md "Simulator"): the agent's typed
 * commands create a group, a password user and a self-removing scheduler entry; the user logs in
 * with its password from the allowed address only and can do no more than its group's policy.
 */
const ROUTER = "127.0.0.51";
const agentKey = generateEd25519KeyPair();
let server: RouterOsSshServer;
let agent: RouterOsClient;

beforeAll(async () => {
  server = await startRouterOsSshServer({
    host: ROUTER,
    port: 0,
    username: "fleet",
    authorizedKeys: [agentKey.public],
    lan: () => ({ host: "127.0.0.1", port: 9 }),
  });
  agent = await new SshRouterOsConnector({
    username: "fleet",
    privateKey: agentKey.private,
    connectTimeoutMs: 5000,
    commandTimeoutMs: 5000,
    hostKeys: new InMemoryHostKeyStore(),
  }).connect({ routerId: "sim", host: ROUTER, port: server.port });
});

afterAll(async () => {
  agent?.close();
  await server?.close();
});

interface Login {
  client: ssh2.Client;
  run(command: string): Promise<string>;
  closed: Promise<void>;
}

/** A password login from `from` (a loopback source address), as an engineer through the entry point. */
const login = async (username: string, password: string, from = "127.0.0.1"): Promise<Login> => {
  const sock = net.connect({ host: ROUTER, port: server.port, localAddress: from });
  await once(sock, "connect");
  const client = new ssh2.Client();
  const closed = new Promise<void>((resolve) => client.on("close", () => resolve()));
  await new Promise<void>((resolve, reject) => {
    client.once("ready", () => resolve());
    client.once("error", reject);
    client.connect({ sock, username, password, tryKeyboard: false, readyTimeout: 5000 });
  });
  const run = (command: string) =>
    new Promise<string>((resolve, reject) => {
      client.exec(command, (error, stream) => {
        if (error) return reject(error);
        let out = "";
        stream.on("data", (d: Buffer) => {
          out += d.toString();
        });
        stream.on("close", () => resolve(out.trim()));
      });
    });
  return { client, run, closed };
};

const refused = async (username: string, password: string, from?: string) => {
  try {
    const session = await login(username, password, from);
    session.client.end();
    return false;
  } catch {
    return true;
  }
};

const ID_READ = "0a1b2c3d-1111-4222-8333-444455556666";
const ID_FULL = "9f8e7d6c-1111-4222-8333-444455556666";
const PASSWORD = "Read0nlyPassw0rd0123";

describe("temporary access on the simulated router", () => {
  it("a read user logs in with its password from the allowed address, reads, and is refused a write", async () => {
    await agent.exec(addAccessGroup("read")).catch(() => undefined);
    await agent.exec(setAccessGroupPolicy("read"));
    await agent.exec(
      addAccessUser({ accessId: ID_READ, level: "read", password: PASSWORD, allowedAddress: "127.0.0.1" }),
    );
    await agent.exec(addAccessScheduler(ID_READ, 15 * 60_000));
    // A second add of the group answers the failure the agent ignores.
    await expect(agent.exec(addAccessGroup("read"))).rejects.toThrow(/already exists/);
    expect(server.users().find((u) => u.name === "fleet-tmp-0a1b2c3d")).toMatchObject({
      group: "fleet-read",
      address: "127.0.0.1",
    });

    const engineer = await login("fleet-tmp-0a1b2c3d", PASSWORD);
    expect(await engineer.run("/ip address print")).toContain("192.168.88.1/24");
    expect(await engineer.run("/ip address add address=10.9.9.1/24 interface=bridge")).toBe(
      "failure: not enough permissions (9)",
    );
    expect(await engineer.run("/user add name=evil group=full password=x")).toBe("failure: not enough permissions (9)");
    expect(await engineer.run("/system reset-configuration")).toMatch(/bad command name|syntax error|expected/);
    expect(await engineer.run("/ip address print")).not.toContain("10.9.9.1");
    engineer.client.end();

    expect(await refused("fleet-tmp-0a1b2c3d", "wrong-password-0000")).toBe(true);
    expect(await refused("fleet-tmp-0a1b2c3d", PASSWORD, "127.0.0.2")).toBe(true);
  });

  it("a full user may write; the agent's removal drops its session and its login", async () => {
    await agent.exec(addAccessGroup("full")).catch(() => undefined);
    await agent.exec(setAccessGroupPolicy("full"));
    await agent.exec(
      addAccessUser({
        accessId: ID_FULL,
        level: "full",
        password: "FullPassw0rd01234567",
        allowedAddress: "127.0.0.1",
      }),
    );
    await agent.exec(addAccessScheduler(ID_FULL, 15 * 60_000));
    const engineer = await login("fleet-tmp-9f8e7d6c", "FullPassw0rd01234567");
    expect(await engineer.run("/ip address add address=10.9.9.1/24 interface=bridge")).toBe("");
    expect(await engineer.run("/ip address print")).toContain("10.9.9.1/24");
    // CONTRACT 14: no `policy` right, so it cannot make itself permanent: no new user, no wider
    // group, its expiry entry stays, and no scheduler entry of its own with rights it lacks.
    const denied = "failure: not enough permissions (9)";
    expect(await engineer.run('/user add name=evil group=full password="x"')).toBe(denied);
    expect(
      await engineer.run(
        '/user group set [find where name="fleet-full"] policy="read,write,policy,sensitive,password"',
      ),
    ).toBe(denied);
    expect(await engineer.run('/user group add name=evil policy="read,write,policy"')).toBe(denied);
    expect(await engineer.run('/system scheduler remove [find where name="fleet-tmp-9f8e7d6c"]')).toBe(denied);
    expect(
      await engineer.run(
        '/system scheduler add name=evil interval=60s on-event="/user add name=x" policy="read,write,policy"',
      ),
    ).toBe(denied);
    expect(server.users().map((u) => u.name)).not.toContain("evil");
    expect(
      server
        .groups()
        .find((g) => g.name === "fleet-full")
        ?.policy.join(","),
    ).toBe("read,winbox,ssh,web,test,write,reboot");
    expect(server.schedulerEntries()).toEqual(expect.arrayContaining(["fleet-tmp-9f8e7d6c"]));
    expect(server.schedulerEntries()).not.toContain("evil");
    for (const command of removeAccessCommands(ID_FULL)) await agent.exec(command);
    await engineer.closed;
    expect(server.users().some((u) => u.name === "fleet-tmp-9f8e7d6c")).toBe(false);
    expect(await refused("fleet-tmp-9f8e7d6c", "FullPassw0rd01234567")).toBe(true);
  });

  it("an existing fleet-full group someone widened is set back to exactly the contract's policy", async () => {
    await agent.exec('/user group set [find where name="fleet-full"] policy="read,write,policy,sensitive,password"');
    expect(server.groups().find((g) => g.name === "fleet-full")?.policy).toContain("policy");
    await expect(agent.exec(addAccessGroup("full"))).rejects.toThrow(/already exists/);
    await agent.exec(setAccessGroupPolicy("full"));
    expect(
      server
        .groups()
        .find((g) => g.name === "fleet-full")
        ?.policy.join(","),
    ).toBe("read,winbox,ssh,web,test,write,reboot");
  });

  it("the router's own scheduler removes the user and itself when its time comes", async () => {
    const engineer = await login("fleet-tmp-0a1b2c3d", PASSWORD);
    expect(server.schedulerEntries()).toContain("fleet-tmp-0a1b2c3d");
    server.fireSchedulers();
    await engineer.closed;
    await eventually(() => !server.users().some((u) => u.name === "fleet-tmp-0a1b2c3d"), "the user to go");
    expect(server.schedulerEntries()).not.toContain("fleet-tmp-0a1b2c3d");
    expect(await refused("fleet-tmp-0a1b2c3d", PASSWORD)).toBe(true);
    // The export shows what is configured, never a password.
    const exported = await agent.exec("/export terse");
    expect(exported).toContain("/user group");
    expect(exported).not.toContain(PASSWORD);
  });
});
