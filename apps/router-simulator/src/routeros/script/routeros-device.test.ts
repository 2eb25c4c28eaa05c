import {
  type AdoptionScriptInput,
  adoptionScript,
  deviceModeMessage,
  ManualClock,
  routerOsString,
} from "@fleet/shared";
import ssh2 from "ssh2";
import { describe, expect, it } from "vitest";
import { generateEd25519KeyPair } from "@fleet/shared";
import { type HttpRequest, parseRouterOsInterval, RosTime, RouterOsDevice, serializeJson } from "./routeros-device.ts";
import { parseRouterOsScript, parseRouterOsStringLiteral, RouterOsSyntaxError } from "./routeros-script-parser.ts";

const agent = generateEd25519KeyPair();
const agentPublic = agent.public.trim().split(" ").slice(0, 2).join(" ");
const agentBlob = (() => {
  const parsed = ssh2.utils.parseKey(agentPublic);
  if (parsed instanceof Error) throw parsed;
  return parsed.getPublicSSH();
})();

const INPUT: AdoptionScriptInput = {
  routerId: "0b6c6a8e-1111-4222-8333-944455556666",
  routerName: "Office",
  heartbeatUrl: "http://127.0.0.1:3001/v1/heartbeat",
  heartbeatToken: "hb_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG",
  intervalMs: 60_000,
  sshUser: "mgmt",
  tunnelNetwork: "100.64.0.0/10",
  agentPublicKey: agentPublic,
};

const BOOTED = Date.UTC(2026, 10, 20, 10, 0, 0);
const NOW = BOOTED + (86_400 + 3 * 3600 + 4 * 60 + 5) * 1000;

const device = (overrides: Partial<ConstructorParameters<typeof RouterOsDevice>[0]> = {}) => {
  const requests: HttpRequest[] = [];
  const d = new RouterOsDevice({
    identity: "edge-1",
    version: "7.16.2 (stable)",
    boardName: "RB5009UG+S+",
    model: "RB5009UG+S+",
    routerboard: true,
    serialNumber: "HE708ABCDEF",
    licenseId: "AB12-CD34",
    bootedAt: BOOTED,
    clock: new ManualClock(NOW),
    http: async (request) => {
      requests.push(request);
      return { status: 200, body: '{"type":"ack","interval_ms":60000}' };
    },
    ...overrides,
  });
  return { d, requests };
};

const names = (d: RouterOsDevice, table: keyof RouterOsDevice["tables"]) =>
  d.tables[table].map((i) => i.props.name ?? i.props.user);

describe("the adoption script on a simulated RouterOS device", () => {
  it("creates the group, user, key, script and scheduler, and sends one heartbeat at once", async () => {
    const { d, requests } = device();
    await d.run(adoptionScript(INPUT));
    expect(d.tables["user group"].find((g) => g.props.name === "fleet-mgmt")?.props.policy).toBe("ssh,read,write,test");
    expect(d.tables.user.find((u) => u.props.name === "mgmt")?.props).toMatchObject({
      group: "fleet-mgmt",
      address: "100.64.0.0/10",
    });
    expect(d.tables["user ssh-keys"].map((k) => k.props)).toEqual([{ user: "mgmt", key: agentPublic }]);
    expect(d.tables["system scheduler"].map((s) => s.props)).toEqual([
      expect.objectContaining({ name: "fleet-heartbeat", "start-time": "startup", interval: "60s" }),
    ]);
    expect(requests).toHaveLength(1);
    const [beat] = requests;
    expect(beat?.method).toBe("POST");
    expect(beat?.url).toBe("http://127.0.0.1:3001/v1/heartbeat");
    expect(beat?.headers).toEqual([
      ["Authorization", `Bearer ${INPUT.heartbeatToken}`],
      ["Content-Type", "application/json"],
    ]);
    // :serialize writes keys in RouterOS's sorted order, no spaces; uptime as RouterOS prints it.
    // Health (resources, interfaces) sits between these keys: routeros-device-health.test.ts.
    expect(beat?.body).toMatch(
      /^\{"board_name":"RB5009UG\+S\+","hardwareboard":true,"identity":"edge-1","interfaces":\[/,
    );
    expect(beat?.body).toContain('"model":"RB5009UG+S+","resources":{"cpu_load":');
    expect(beat?.body).toMatch(
      /\},"serial_number":"HE708ABCDEF","software_id":"AB12-CD34","software_version":"7.16.2 \(stable\)","type":"heartbeat","uptime":"1d03:04:05"\}$/,
    );
    d.stop();
  });

  it("run twice leaves one of each object", async () => {
    const { d, requests } = device();
    await d.run(adoptionScript(INPUT));
    await d.run(adoptionScript(INPUT));
    expect(names(d, "user group").filter((n) => n === "fleet-mgmt")).toHaveLength(1);
    expect(names(d, "user")).toEqual(["admin", "mgmt"]);
    expect(d.tables["user ssh-keys"]).toHaveLength(1);
    expect(names(d, "system script")).toEqual(["fleet-heartbeat"]);
    expect(names(d, "system scheduler")).toEqual(["fleet-heartbeat"]);
    expect(requests).toHaveLength(2);
    d.stop();
  });

  it("a CHR reports its system-id as software id and serial number, and hardwareboard false", async () => {
    const { d, requests } = device({ routerboard: false, boardName: "CHR", model: "", licenseId: "sYsTeMiD9" });
    await d.run(adoptionScript(INPUT));
    expect(JSON.parse(requests[0]?.body ?? "")).toMatchObject({
      hardwareboard: false,
      model: "CHR",
      serial_number: "sYsTeMiD9",
      software_id: "sYsTeMiD9",
    });
    d.stop();
  });

  it("writes numeric strings as :serialize does before 7.17: floats with six decimals", async () => {
    const { d, requests } = device({ identity: "1234" });
    await d.run(adoptionScript(INPUT));
    expect(requests[0]?.body).toContain('"identity":1234.000000');
    d.stop();
  });

  it.each([['quote " and \\ backslash'], ["$var and $(x) and [/system reboot]; /user remove 0"], ["Zürich ✓ 東京 🚀"]])(
    "keeps a hostile identity %j inside the JSON string",
    async (identity) => {
      const { d, requests } = device({ identity });
      await d.run(adoptionScript(INPUT));
      expect(JSON.parse(requests[0]?.body ?? "").identity).toBe(identity);
      d.stop();
    },
  );

  it.each(["fetch", "scheduler"] as const)(
    "stops with a clear error and changes nothing when device-mode forbids %s",
    async (feature) => {
      const { d, requests } = device({
        deviceMode: { fetch: feature !== "fetch", scheduler: feature !== "scheduler" },
      });
      const before = JSON.stringify(d.tables);
      await expect(d.run(adoptionScript(INPUT))).rejects.toThrow(deviceModeMessage(feature));
      expect(deviceModeMessage(feature)).toMatch(/physical button press/);
      expect(JSON.stringify(d.tables)).toBe(before);
      expect(requests).toHaveLength(0);
    },
  );
});

describe("SSH logins follow the router's users and keys", () => {
  it("admits the agent's key for the created user from the tunnel network only", async () => {
    const { d } = device();
    await d.run(adoptionScript(INPUT));
    expect(d.authorizes("mgmt", agentBlob, "100.64.0.1")).toBe(true);
    expect(d.authorizes("mgmt", agentBlob, "::ffff:100.127.255.254")).toBe(true);
    expect(d.authorizes("mgmt", agentBlob, "192.0.2.10")).toBe(false);
    expect(d.authorizes("admin", agentBlob, "100.64.0.1")).toBe(false);
    const other = ssh2.utils.parseKey(generateEd25519KeyPair().public);
    if (other instanceof Error) throw other;
    expect(d.authorizes("mgmt", other.getPublicSSH(), "100.64.0.1")).toBe(false);
    d.stop();
  });
});

describe("the RouterOS script parser", () => {
  it.each([
    'quote " inside',
    "backslash \\ and \\n literally",
    "$var $(expr) ?help",
    "[/system reboot]; /user remove 0",
    "line\nbreak\r\nand\ttab",
    "control \u0000 \u0001 \u007f",
    "Zürich ✓ 東京 🚀",
  ])("reads the generator's string for %j back as exactly that", (value) => {
    const parsed = parseRouterOsStringLiteral(routerOsString(value));
    expect(parsed).toEqual(value === "" ? { kind: "str", parts: [] } : { kind: "str", parts: [value] });
  });

  it("substitutes an unescaped $name in a string, as RouterOS does (the generator never leaves one)", async () => {
    const { d } = device();
    await d.run(':local x "inner"\n:log info "a $x b"');
    expect(d.log.at(-1)?.message).toBe("a inner b");
  });

  it.each([
    ["/system shutdown", /bad command name shutdown/],
    ["/system reset-configuration", /bad command name reset-configuration/],
    [":execute {/system shutdown}", /bad command name execute/],
    ['/user add name="x" group=full bogus=1', /expected end of command/],
    ["/ip service disable ssh", /bad command name service/],
  ])("fails loudly on %j", async (script, message) => {
    const { d } = device();
    await expect(d.run(script)).rejects.toThrow(message);
  });

  it("refuses scripts it cannot parse, naming the place", () => {
    expect(() => parseRouterOsScript(':log info "unterminated')).toThrow(RouterOsSyntaxError);
    expect(() => parseRouterOsScript(":if (true) do={ :log info x")).toThrow(/missing }/);
    expect(() => parseRouterOsScript(':log info "what?"')).toThrow(/help/);
  });

  it("runs the one-line adoption command: fetch to a file, import it, remove the file", async () => {
    const script = adoptionScript(INPUT);
    const { d, requests } = device({
      http: async (request) => {
        requests.push(request);
        return request.method === "GET" ? { status: 200, body: script } : { status: 200, body: "{}" };
      },
    });
    await d.run(
      `/tool fetch url=${routerOsString("http://127.0.0.1:3000/api/adoption/ad_x")} dst-path=fleet-adopt.rsc; /import file-name=fleet-adopt.rsc; /file remove fleet-adopt.rsc`,
    );
    expect(requests.map((r) => r.method)).toEqual(["GET", "POST"]);
    expect(d.tables.file).toEqual([]);
    expect(names(d, "system scheduler")).toEqual(["fleet-heartbeat"]);
    d.stop();
  });
});

describe("RouterOS values", () => {
  it("prints durations like RouterOS and parses scheduler intervals", () => {
    expect(new RosTime(0).toString()).toBe("00:00:00");
    expect(new RosTime(86_399).toString()).toBe("23:59:59");
    expect(new RosTime(604_800 * 52 + 3 * 86_400).toString()).toBe("52w3d00:00:00");
    expect(parseRouterOsInterval("30s")).toBe(30_000);
    expect(parseRouterOsInterval("250ms")).toBe(250);
    expect(parseRouterOsInterval("1m")).toBe(60_000);
    expect(parseRouterOsInterval("soon")).toBeUndefined();
  });

  it("serializes like :serialize to=json", () => {
    const value = new Map<string, string | boolean>([
      ["b", "12"],
      ["a", 'x"y'],
      ["c", true],
    ]);
    expect(serializeJson(value)).toBe('{"a":"x\\"y","b":12.000000,"c":true}');
    expect(serializeJson(value, true)).toBe('{"a":"x\\"y","b":"12","c":true}');
  });
});
