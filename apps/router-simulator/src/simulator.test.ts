import { eventually } from "@fleet/shared/testing";
import { loadSimulatorDefaults } from "./config.ts";
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocketServer } from "ws";
import { ArgsError, parseArgs, USAGE } from "./cli-args.ts";
import { startSimulator } from "./simulator.ts";
import { tunnelIpFor } from "./tunnel-ips.ts";

/** A stand-in daemon speaking docs/api.md "Routers and heartbeats": checks the token, records frames, acks. */
interface Received {
  token: string;
  remote: string | undefined;
  frame: Record<string, unknown>;
}
let wss: WebSocketServer;
let url: string;
const received: Received[] = [];
const INTERVAL = 40;
const REVOKED = "hb_revoked_token_000000000000";

beforeAll(async () => {
  wss = new WebSocketServer({ host: "127.0.0.1", port: 0, path: "/v1/heartbeat" });
  wss.on("headers", () => {});
  wss.options.verifyClient = (info, done) => done(info.req.headers.authorization !== `Bearer ${REVOKED}`, 401);
  wss.on("connection", (ws, req) => {
    ws.on("message", (data) => {
      received.push({
        token: String(req.headers.authorization).slice(7),
        remote: req.socket.remoteAddress,
        frame: JSON.parse(data.toString()),
      });
      ws.send(JSON.stringify({ type: "ack", interval_ms: INTERVAL }));
    });
  });
  await once(wss, "listening");
  url = `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/v1/heartbeat`;
});

afterAll(async () => {
  for (const client of wss.clients) client.terminate();
  await new Promise((resolve) => wss.close(resolve));
});

const fleet = (n: number, prefix: string) =>
  Array.from({ length: n }, (_, i) => ({
    router_id: `${prefix}-0000-4000-8000-${String(i).padStart(12, "0")}`,
    heartbeat_token: `hb_${prefix}_${i}_tokentokentoken`,
    name: `r${i}`,
  }));
const framesOf = (token: string) => received.filter((r) => r.token === token).map((r) => r.frame);

describe("simulator", () => {
  it("keeps routers beating at the acked interval from their own loopback address", async () => {
    const routers = fleet(3, "aaaaaaaa");
    const sim = await startSimulator({ routers, heartbeatUrl: url });
    try {
      await expect
        .poll(() => routers.every((r) => framesOf(r.heartbeat_token).length >= 4), { timeout: 5_000 })
        .toBe(true);
      const first = received.find((r) => r.token === routers[0]?.heartbeat_token);
      expect(first?.remote).toBe("127.0.1.1");
      expect(first?.frame).toMatchObject({
        type: "heartbeat",
        identity: "sim-0001",
        tunnel_ip: "127.0.1.1",
        model: "RB5009UG+S+",
        hardwareboard: true,
        uptime: expect.any(Number),
      });
      expect(sim.routers.map((r) => r.tunnelIp)).toEqual(["127.0.1.1", "127.0.1.2", "127.0.1.3"]);
      expect(sim.summary()).toMatchObject({ routers: 3, online: 3, errors: 0 });
    } finally {
      await sim.close();
    }
  });

  it("silences, flaps and reboots the routers asked for", async () => {
    const routers = fleet(4, "bbbbbbbb");
    const [silent, flapping, rebooting, steady] = routers.map((r) => r.heartbeat_token);
    const sim = await startSimulator({ routers, heartbeatUrl: url, silent: 1, flap: 1, reboot: 1, phaseIntervals: 3 });
    try {
      expect(sim.routers.map((r) => r.behaviour)).toEqual(["silent", "flap", "reboot", "steady"]);
      // The rebooting router goes away and returns with an uptime that started over.
      await expect
        .poll(
          () => {
            const uptimes = framesOf(rebooting ?? "").map((f) => Number(f.uptime));
            return uptimes.length > 1 && (uptimes.at(-1) ?? 0) < (uptimes[0] ?? 0);
          },
          { timeout: 5_000 },
        )
        .toBe(true);
      expect(framesOf(silent ?? "")).toHaveLength(1);
      expect(sim.routers[0]?.online).toBe(false);
      const flapUptimes = framesOf(flapping ?? "").map((f) => Number(f.uptime));
      // Flapping keeps its uptime (the link flaps, not the router).
      expect(flapUptimes.every((u, i) => i === 0 || u >= (flapUptimes[i - 1] ?? 0))).toBe(true);
      expect(framesOf(steady ?? "").length).toBeGreaterThan(framesOf(flapping ?? "").length);
    } finally {
      await sim.close();
    }
  });

  it("stops a router whose token is refused (deleted)", async () => {
    const sim = await startSimulator({
      routers: [{ router_id: "r", heartbeat_token: REVOKED, name: "gone" }],
      heartbeatUrl: url,
    });
    try {
      await eventually(() => sim.routers[0]?.stats.refused === true, "the refusal");
      expect(sim.summary().refused).toBe(1);
    } finally {
      await sim.close();
    }
  });
});

describe("command line", () => {
  it("finds the system from the environment the system reads, or beside the heartbeat URL", () => {
    const defaults = loadSimulatorDefaults({
      HOST: "127.0.0.5",
      PORT: "4100",
      HEARTBEAT_PORT: "4101",
      TUNNEL_SSH_PORT: "2222",
    });
    expect(defaults).toEqual({
      heartbeatUrl: "ws://127.0.0.5:4101/v1/heartbeat",
      apiUrl: "http://127.0.0.5:4100",
      sshPort: 2222,
      sshUser: undefined,
      dataDir: ".data",
    });
    // Development and production defaults of TUNNEL_SSH_PORT, as the tunnel agent reads them.
    expect(loadSimulatorDefaults({}).sshPort).toBe(2222);
    expect(loadSimulatorDefaults({ NODE_ENV: "production" }).sshPort).toBe(22);
    expect(loadSimulatorDefaults({ DATA_DIR: "/tmp/fleet-x" }).dataDir).toBe("/tmp/fleet-x");
    expect(parseArgs(["--routers", "1"], defaults)).toMatchObject({
      heartbeatUrl: defaults.heartbeatUrl,
      apiUrl: defaults.apiUrl,
    });
    const onlyHeartbeat = parseArgs(
      ["--routers", "1", "--heartbeat-url", "ws://127.0.0.9:5001/v1/heartbeat"],
      loadSimulatorDefaults({}),
    );
    expect(onlyHeartbeat.apiUrl).toBe("http://127.0.0.9:3000");
    expect(() => loadSimulatorDefaults({ PORT: "70000" })).toThrow(/PORT/);
  });

  it("parses the fleet change options: reboot time and routers that lose their tunnel", () => {
    expect(parseArgs(["--routers", "3", "--adopt"])).toMatchObject({ rebootSeconds: 10, breakTunnelOnChange: 0 });
    expect(
      parseArgs(["--routers", "3", "--adopt", "--reboot-seconds", "2", "--break-tunnel-on-change", "3"]),
    ).toMatchObject({ rebootSeconds: 2, breakTunnelOnChange: 3 });
    expect(() => parseArgs(["--routers", "3", "--adopt", "--break-tunnel-on-change", "4"])).toThrow(/exceed/);
    expect(() => parseArgs(["--routers", "3", "--break-tunnel-on-change", "1"])).toThrow(/needs --adopt/);
    expect(() => parseArgs(["--routers", "3", "--adopt", "--reboot-seconds", "x"])).toThrow(/--reboot-seconds/);
  });

  it("parses the options of docs/routeros.md, Simulator", () => {
    expect(
      parseArgs([
        "--routers",
        "10",
        "--heartbeat-url",
        "ws://127.0.0.1:4001/v1/heartbeat",
        "--token-file",
        "t.json",
        "--silent",
        "2",
        "--flap",
        "1",
        "--reboot",
        "3",
      ]),
    ).toMatchObject({
      routers: 10,
      heartbeatUrl: "ws://127.0.0.1:4001/v1/heartbeat",
      tokenFile: "t.json",
      silent: 2,
      flap: 1,
      reboot: 3,
    });
  });

  it.each([
    [[], /--routers N is required/],
    [["--routers", "0"], /--routers N is required/],
    [["--routers", "100001"], /between 0 and 100000/],
    [["--routers", "x"], /integer/],
    [["--routers", "2", "--silent", "2", "--flap", "1"], /cannot exceed/],
    [["--routers", "2", "--heartbeat-url", "http://x"], /ws: or wss:/],
    [["--routers", "2", "--bogus"], /unknown option --bogus/],
    [["--routers"], /--routers needs a value/],
    [["--routers", "2", "extra"], /unexpected argument extra/],
    [["--routers", "2", "--email", "nobody"], /--email must be an email address/],
  ])("refuses %j", (argv, message) => {
    expect(() => parseArgs(argv)).toThrow(ArgsError);
    expect(() => parseArgs(argv)).toThrow(message);
  });

  it("answers --help without other options, and signs in as the README's user by default", () => {
    expect(parseArgs(["--help"]).help).toBe(true);
    expect(parseArgs(["-h"]).help).toBe(true);
    expect(parseArgs(["--routers", "3", "--adopt"])).toMatchObject({ help: false, email: "you@example.com" });
    expect(parseArgs(["--routers", "3", "--email", "ops@example.net"]).email).toBe("ops@example.net");
  });

  it("takes --overload, --overheat and --lossy up to --routers, with --adopt, and lists them in --help", () => {
    expect(
      parseArgs(["--routers", "3", "--adopt", "--overload", "3", "--overheat", "1", "--lossy", "2"]),
    ).toMatchObject({ overload: 3, overheat: 1, lossy: 2 });
    expect(parseArgs(["--routers", "3", "--adopt"])).toMatchObject({ overload: 0, overheat: 0, lossy: 0 });
    for (const flag of ["--overload", "--overheat", "--lossy"]) {
      expect(() => parseArgs(["--routers", "3", "--adopt", flag, "4"])).toThrow(`${flag} cannot exceed --routers`);
      expect(() => parseArgs(["--routers", "3", flag, "1"])).toThrow(/need --adopt/);
      expect(() => parseArgs(["--routers", "3", "--adopt", flag, "-1"])).toThrow(ArgsError);
      expect(USAGE).toContain(`${flag} K`);
    }
  });

  it("gives every router a distinct loopback tunnel address", () => {
    expect(tunnelIpFor(0)).toBe("127.0.1.1");
    expect(tunnelIpFor(253)).toBe("127.0.1.254");
    expect(tunnelIpFor(254)).toBe("127.0.2.1");
    expect(tunnelIpFor(254 * 254)).toBe("127.1.1.1");
    const all = new Set(Array.from({ length: 70_000 }, (_, i) => tunnelIpFor(i)));
    expect(all.size).toBe(70_000);
    expect(() => tunnelIpFor(-1)).toThrow(RangeError);
  });
});
