import type { ForwardRecord } from "@fleet/db";
import { describe, expect, it } from "vitest";
import type { RouterOsClient } from "../routeros/routeros-client.ts";
import {
  addForwardRule,
  listForwardRules,
  listForwardRulesJson,
  parseTerseRules,
  removeForwardRule,
} from "../routeros/routeros-commands.ts";
import { RouterOsCommandError } from "../routeros/ssh-routeros-client.ts";
import { ensureRule, readTaggedRules } from "./forward-rules.ts";
import { isPermanentJobError } from "./job-errors.ts";

const ID = "0b6f1c1e-1111-4222-8333-444455556666";
const forward: ForwardRecord = {
  id: ID,
  routerId: "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee",
  entryPoint: "localhost",
  port: 40001,
  dstAddress: "192.168.88.10",
  dstPort: 22,
  allowOnlyCidr: "8.8.8.0/24",
  status: "active",
  expiresAt: new Date("2026-11-21T13:00:00Z"),
  createdAt: new Date("2026-11-21T12:00:00Z"),
  closedAt: null,
  appliedAt: null,
  failureReason: null,
};

const TUNNEL = "100.64.0.7";
const pin = { tunnelIp: TUNNEL };

/**
 * A router that answers the rule listings with fixed rules and records every command. `json`
 * false plays a router older than RouterOS 7.13, which does not know `:serialize`.
 */
const fakeRouter = (terse: string[], options: { json?: boolean } = {}) => {
  const sent: string[] = [];
  const client: RouterOsClient = {
    exec: async (command) => {
      sent.push(command);
      if (command.startsWith(":put [:serialize")) {
        if (options.json === false) {
          throw new RouterOsCommandError(
            command,
            "bad command name serialize (line 1 column 8)",
            "error reported by router",
          );
        }
        return JSON.stringify(terse.map(terseToJson));
      }
      return command.includes("print terse") ? terse.join("\r\n") : "";
    },
    close: () => undefined,
  };
  return { client, sent };
};

/** The same rule as RouterOS 7.13+ serializes it (`disabled` a boolean, other values text). */
const terseToJson = (text: string): Record<string, unknown> => {
  const [rule] = parseTerseRules(text);
  if (!rule) throw new Error(`not a tagged terse line: ${text}`);
  return { ".id": `*${rule.index + 1}`, ...rule.raw, disabled: rule.disabled };
};

const line = (index: number, fields: string) => `${String(index).padStart(2)}    ${fields}`;
const good = `chain=dstnat action=dst-nat to-addresses=192.168.88.10 to-ports=22 protocol=tcp dst-address=${TUNNEL} dst-port=40001 log=no log-prefix="" comment=fleet-fwd:${ID}`;
const add = addForwardRule({ tunnelIp: TUNNEL, port: 40001, dstAddress: "192.168.88.10", dstPort: 22, forwardId: ID });

describe("ensureRule", () => {
  it("adds a missing rule pinned to the tunnel address", async () => {
    const router = fakeRouter([]);
    expect(await ensureRule(router.client, forward, pin, await readTaggedRules(router.client))).toBe("added");
    expect(router.sent.slice(1)).toEqual([add]);
    expect(add).toContain(`dst-address=${TUNNEL} dst-port=40001`);
  });

  it("leaves a correct rule alone, so a second delivery of the job changes nothing", async () => {
    const router = fakeRouter([line(0, good)]);
    expect(await ensureRule(router.client, forward, pin, await readTaggedRules(router.client))).toBe("present");
    expect(router.sent).toEqual([listForwardRulesJson()]);
  });

  it.each([
    ["a wrong destination", [line(0, good.replace("192.168.88.10", "192.168.88.11"))]],
    ["a wrong port", [line(0, good.replace("dst-port=40001", "dst-port=40002"))]],
    ["a disabled rule", [`${String(0).padStart(2)} X  ${good}`]],
    ["a duplicate", [line(0, good), line(1, good)]],
    [
      "a rule without dst-address (open on every address of the router)",
      [line(0, good.replace(`dst-address=${TUNNEL} `, ""))],
    ],
    ["a rule pinned to another address", [line(0, good.replace(`dst-address=${TUNNEL}`, "dst-address=100.64.0.8"))]],
    ["a rule with a source matcher nobody configured", [line(0, `${good} src-address=10.255.0.1`)]],
  ])("replaces %s", async (_what, terse) => {
    const router = fakeRouter(terse);
    expect(await ensureRule(router.client, forward, pin, await readTaggedRules(router.client))).toBe("replaced");
    expect(router.sent.slice(1)).toEqual([removeForwardRule(ID), add]);
  });

  it("with ENTRY_POINT_TUNNEL_SOURCE set, adds src-address and replaces a rule without it or with another", async () => {
    const sourced = { tunnelIp: TUNNEL, tunnelSource: "10.255.0.0/24" };
    const addSourced = addForwardRule({
      ...sourced,
      port: 40001,
      dstAddress: "192.168.88.10",
      dstPort: 22,
      forwardId: ID,
      srcAddress: "10.255.0.0/24",
    });
    expect(addSourced).toContain("src-address=10.255.0.0/24");
    for (const rules of [[line(0, good)], [line(0, `${good} src-address=10.255.1.0/24`)]]) {
      const router = fakeRouter(rules);
      expect(await ensureRule(router.client, forward, sourced, await readTaggedRules(router.client))).toBe("replaced");
      expect(router.sent.slice(1)).toEqual([removeForwardRule(ID), addSourced]);
    }
    const right = fakeRouter([line(0, `${good} src-address=10.255.0.0/24`)]);
    expect(await ensureRule(right.client, forward, sourced, await readTaggedRules(right.client))).toBe("present");
  });

  it("refuses, as a permanent error, a stored value no command may carry", async () => {
    const router = fakeRouter([]);
    const error = await ensureRule(
      router.client,
      { ...forward, dstAddress: '10.0.0.1" ; /system reboot' },
      pin,
      [],
    ).catch((e: unknown) => e);
    expect(isPermanentJobError(error)).toBe(true);
    expect(router.sent).toEqual([]);
  });
});

describe("readTaggedRules", () => {
  it("falls back to print terse on a router without :serialize, and remembers it per router", async () => {
    const router = fakeRouter([line(0, good)], { json: false });
    const memo = { routerId: forward.routerId, formats: new Map<string, "json" | "terse">() };
    expect((await readTaggedRules(router.client, memo)).map((r) => r.forwardId)).toEqual([ID]);
    expect(router.sent).toEqual([listForwardRulesJson(), listForwardRules()]);
    await readTaggedRules(router.client, memo);
    expect(router.sent.slice(2)).toEqual([listForwardRules()]);
  });

  it("propagates failures that say nothing about the router's version", async () => {
    const client: RouterOsClient = {
      exec: async () => {
        throw new Error("SSH connection to router closed");
      },
      close: () => undefined,
    };
    await expect(readTaggedRules(client)).rejects.toThrow(/closed/);
  });
});
