import { once } from "node:events";
import net from "node:net";
import ssh2 from "ssh2";
import { afterEach, describe, expect, it } from "vitest";
import {
  type RouterOsSshServer,
  type RouterOsSshServerOptions,
  startRouterOsSshServer,
} from "@fleet/router-simulator/routeros/routeros-ssh-server";
import { type HostKeyStore, InMemoryHostKeyStore } from "@fleet/tunnel-agent/routeros/host-key-store";
import { exportConfiguration, listForwardRules } from "@fleet/tunnel-agent/routeros/routeros-commands";
import { RouterOsOutputTooLargeError } from "@fleet/tunnel-agent/routeros/routeros-client";
import {
  HostKeyMismatchError,
  RouterOsCommandError,
  RouterOsTimeoutError,
  DEFAULT_MAX_OUTPUT_BYTES,
  SshRouterOsConnector,
  type SshRouterOsConnectorOptions,
} from "@fleet/tunnel-agent/routeros/ssh-routeros-client";
import { generateEd25519KeyPair } from "@fleet/shared";
import { eventually } from "@fleet/shared/testing";

const HOST = "127.0.0.1";
const clientKey = generateEd25519KeyPair();
const otherKey = generateEd25519KeyPair();

/** Offers the authorized public key but signs with `signer`, to prove the server checks signatures. */
class TestAgent extends ssh2.BaseAgent<ssh2.ParsedKey> {
  readonly #signer: ssh2.ParsedKey;

  constructor(signer: string) {
    super();
    this.#signer = ssh2.utils.parseKey(signer) as ssh2.ParsedKey;
  }

  getIdentities(cb: (err: Error | null, keys: ssh2.ParsedKey[]) => void): void {
    cb(null, [ssh2.utils.parseKey(clientKey.public) as ssh2.ParsedKey]);
  }

  sign(_key: ssh2.ParsedKey, data: Buffer, a: unknown, b?: (err: Error | null, sig: Buffer) => void): void {
    const cb = (typeof a === "function" ? a : b) as (err: Error | null, sig: Buffer) => void;
    cb(null, this.#signer.sign(data));
  }
}

async function agentLogin(sim: RouterOsSshServer, agent: TestAgent): Promise<void> {
  const conn = new ssh2.Client();
  cleanups.push(() => conn.end());
  conn.connect({ host: HOST, port: sim.port, username: "fleet", agent });
  await new Promise<void>((resolve, reject) => conn.once("ready", resolve).once("error", reject));
}

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

async function startSim(extra: Partial<RouterOsSshServerOptions> = {}): Promise<RouterOsSshServer> {
  const sim = await startRouterOsSshServer({ host: HOST, port: 0, lan: () => ({ host: HOST, port: 9 }), ...extra });
  cleanups.push(() => sim.close());
  return sim;
}

function connector(extra: Partial<SshRouterOsConnectorOptions> = {}): SshRouterOsConnector {
  return new SshRouterOsConnector({
    username: "fleet",
    privateKey: clientKey.private,
    connectTimeoutMs: 5000,
    commandTimeoutMs: 5000,
    hostKeys: new InMemoryHostKeyStore(),
    ...extra,
  });
}

const ROUTER_ID = "0b6f1c1e-1111-4222-8333-444455556666";
const OTHER_ROUTER_ID = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee";

const c2 = (sim: RouterOsSshServer, hostKeys: InMemoryHostKeyStore) =>
  connector({ hostKeys }).connect({ routerId: OTHER_ROUTER_ID, host: HOST, port: sim.port });

async function connect(sim: RouterOsSshServer, c = connector()) {
  const client = await c.connect({ routerId: ROUTER_ID, host: HOST, port: sim.port });
  cleanups.push(() => client.close());
  return client;
}

describe("SshRouterOsConnector", () => {
  it("runs several commands over one SSH login", async () => {
    const sim = await startSim();
    const router = await connect(sim);
    await router.exec(listForwardRules());
    await router.exec("/ip firewall nat add chain=dstnat comment=x");
    expect(await router.exec("/ip firewall nat print terse")).toMatch(/^ 0 {4}chain=dstnat .*comment=x\r\n$/);
    expect(sim.logins()).toBe(1);
    expect(sim.commands()).toHaveLength(3);
  });

  it("turns in-band RouterOS errors into RouterOsCommandError and keeps the session usable", async () => {
    const sim = await startSim();
    const router = await connect(sim);
    const error = await router.exec("/ip firewall nat add chain=dstnat to-addresses=lan").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RouterOsCommandError);
    expect(error).toMatchObject({
      command: "/ip firewall nat add chain=dstnat to-addresses=lan",
      output: "failure: value of to-addresses must be ip address\r\n",
    });
    await expect(router.exec("bogus")).rejects.toThrow("bad command name bogus (line 1 column 1)");
    expect(await router.exec(listForwardRules())).toBe("");
  });

  it("accepts only authorized client keys and the configured user", async () => {
    const sim = await startSim({ authorizedKeys: [clientKey.public], username: "fleet" });
    await expect(connect(sim, connector({ privateKey: otherKey.private }))).rejects.toThrow(
      /authentication methods failed/,
    );
    await expect(connect(sim, connector({ username: "admin" }))).rejects.toThrow(/authentication methods failed/);
    const router = await connect(sim);
    expect(await router.exec(listForwardRules())).toBe("");
    expect(sim.logins()).toBe(1);
  });

  it("verifies the client's signature, not just the offered public key", async () => {
    const sim = await startSim({ authorizedKeys: [clientKey.public] });
    await expect(agentLogin(sim, new TestAgent(otherKey.private))).rejects.toThrow(/authentication methods failed/);
    await agentLogin(sim, new TestAgent(clientKey.private));
    expect(sim.logins()).toBe(1);
  });

  it("pins the host key on first contact and refuses a changed one", async () => {
    const hostKey = generateEd25519KeyPair().private;
    const hostKeys = new InMemoryHostKeyStore();
    const first = await startSim({ hostKey });
    const port = first.port;
    (await connect(first, connector({ hostKeys }))).close();
    expect(await hostKeys.get(ROUTER_ID)).toBe(first.hostKeyFingerprint);
    expect(first.hostKeyFingerprint).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
    await first.close();

    const same = await startSim({ hostKey, port });
    (await connect(same, connector({ hostKeys }))).close();
    await same.close();

    const impostor = await startSim({ port });
    const error = await connect(impostor, connector({ hostKeys })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HostKeyMismatchError);
    const message = (error as Error).message;
    expect(message).toContain(`router ${ROUTER_ID} (at ${HOST}:${port})`);
    expect(message).toContain(first.hostKeyFingerprint);
    expect(message).toContain(impostor.hostKeyFingerprint);
    expect(impostor.logins()).toBe(0);
    expect(await hostKeys.get(ROUTER_ID)).toBe(first.hostKeyFingerprint);

    // Pins follow the router, not the address: another router at the same endpoint has its own.
    const other = await c2(impostor, hostKeys);
    other.close();
    expect(await hostKeys.get(OTHER_ROUTER_ID)).toBe(impostor.hostKeyFingerprint);
    expect(await hostKeys.get(ROUTER_ID)).toBe(first.hostKeyFingerprint);
  });

  it("uses a pin the job read with its own row without asking the store, and refuses another key", async () => {
    const sim = await startSim();
    const store: HostKeyStore = {
      get: async () => {
        throw new Error("the store was asked");
      },
      set: async () => {
        throw new Error("the store was asked");
      },
    };
    const target = { routerId: ROUTER_ID, host: HOST, port: sim.port };
    const router = await connector({ hostKeys: store }).connect({ ...target, pinned: sim.hostKeyFingerprint });
    router.close();
    const other = await startSim();
    const error = await connector({ hostKeys: store })
      .connect({ ...target, port: other.port, pinned: sim.hostKeyFingerprint })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HostKeyMismatchError);
    expect([sim.logins(), other.logins()]).toEqual([1, 0]);
  });

  it("rejects a slow command with RouterOsTimeoutError and drops the wedged session", async () => {
    const sim = await startSim({ commandDelayMs: 2000 });
    const router = await connect(sim, connector({ commandTimeoutMs: 200 }));
    const started = Date.now();
    await expect(router.exec(listForwardRules())).rejects.toBeInstanceOf(RouterOsTimeoutError);
    expect(Date.now() - started).toBeLessThan(1500);
    await expect(router.exec(listForwardRules())).rejects.toThrow(/closed/);
  });

  it("reads at most the cap of a command's output: n bytes pass, n + 1 stop the read and drop the session", async () => {
    let size = 0;
    // The simulator answers `<text>\r\n`: `size` bytes in all.
    const sim = await startSim({ exportText: () => "x".repeat(size - 2) });
    const cap = 64 * 1024;
    size = cap;
    const router = await connect(sim);
    expect(Buffer.byteLength(await router.exec(exportConfiguration(), { maxBytes: cap }))).toBe(cap);
    size = cap + 1;
    const error = await router.exec(exportConfiguration(), { maxBytes: cap }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RouterOsOutputTooLargeError);
    expect(error).toMatchObject({ limitBytes: cap, message: expect.stringMatching(/exceeded 65536 bytes/) });
    await expect(router.exec(listForwardRules())).rejects.toThrow(/closed/);
    // Without a cap of its own a command gets the connector's (1 MiB), not an unbounded buffer.
    size = DEFAULT_MAX_OUTPUT_BYTES + 1;
    const other = await connect(sim);
    await expect(other.exec(exportConfiguration())).rejects.toBeInstanceOf(RouterOsOutputTooLargeError);
  });

  it("times out a connect to a silent endpoint", async () => {
    const silent = net.createServer((s) => cleanups.push(() => s.destroy()));
    silent.listen(0, HOST);
    await once(silent, "listening");
    cleanups.push(() => new Promise((resolve) => silent.close(resolve)));
    const port = (silent.address() as net.AddressInfo).port;
    const started = Date.now();
    await expect(
      connector({ connectTimeoutMs: 300 }).connect({ routerId: ROUTER_ID, host: HOST, port }),
    ).rejects.toThrow(/Timed out/);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it("fails a connect that the router ends cleanly before login, instead of waiting forever", async () => {
    // What a router that shuts down (or the simulator's close) does to a login in progress: after
    // the version exchange it sends SSH_DISCONNECT_BY_APPLICATION and ends the connection. ssh2
    // then emits neither 'error' nor 'ready', and clears its own ready timeout.
    const server = new ssh2.Server({ hostKeys: [generateEd25519KeyPair().private] }, (client) => {
      client.on("error", () => undefined);
      client.end();
    });
    server.listen(0, HOST);
    await once(server, "listening");
    cleanups.push(() => new Promise((resolve) => server.close(resolve)));
    const port = (server.address() as net.AddressInfo).port;
    let outcome: unknown;
    connector()
      .connect({ routerId: ROUTER_ID, host: HOST, port })
      .then(
        (client) => {
          client.close();
          outcome = "connected";
        },
        (error: unknown) => {
          outcome = error;
        },
      );
    const error = await eventually(() => outcome, "the connect to settle");
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toBe(
      `SSH connection to router ${ROUTER_ID} (at ${HOST}:${port}) closed before login`,
    );
  });

  it("fails pending commands when the router goes away", async () => {
    const sim = await startSim({ commandDelayMs: 1000 });
    const router = await connect(sim);
    const pending = router.exec(listForwardRules());
    await sim.close();
    await expect(pending).rejects.toThrow(/connection to router closed/);
  });
});
