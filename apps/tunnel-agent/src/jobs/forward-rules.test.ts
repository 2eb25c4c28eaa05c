import type { ForwardRecord } from "@fleet/db";
import { describe, expect, it } from "vitest";
import type { RouterOsClient } from "../routeros/routeros-client.ts";
import { addForwardRule, removeForwardRule } from "../routeros/routeros-commands.ts";
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
};

/** A router that answers `print terse` with fixed lines and records everything else. */
const fakeRouter = (terse: string[]) => {
  const sent: string[] = [];
  const client: RouterOsClient = {
    exec: async (command) => {
      sent.push(command);
      return command.includes("print terse") ? terse.join("\r\n") : "";
    },
    close: () => undefined,
  };
  return { client, sent };
};

const line = (index: number, fields: string) => `${String(index).padStart(2)}    ${fields}`;
const good = `chain=dstnat action=dst-nat to-addresses=192.168.88.10 to-ports=22 protocol=tcp dst-port=40001 log=no log-prefix="" comment=fleet-fwd:${ID}`;

describe("ensureRule", () => {
  it("adds a missing rule", async () => {
    const router = fakeRouter([]);
    expect(await ensureRule(router.client, forward, await readTaggedRules(router.client))).toBe("added");
    expect(router.sent.slice(1)).toEqual([
      addForwardRule({ port: 40001, dstAddress: "192.168.88.10", dstPort: 22, forwardId: ID }),
    ]);
  });

  it("leaves a correct rule alone, so a second delivery of the job changes nothing", async () => {
    const router = fakeRouter([line(0, good)]);
    expect(await ensureRule(router.client, forward, await readTaggedRules(router.client))).toBe("present");
    expect(router.sent).toHaveLength(1);
  });

  it.each([
    ["a wrong destination", [line(0, good.replace("192.168.88.10", "192.168.88.11"))]],
    ["a wrong port", [line(0, good.replace("dst-port=40001", "dst-port=40002"))]],
    ["a disabled rule", [`${String(0).padStart(2)} X  ${good}`]],
    ["a duplicate", [line(0, good), line(1, good)]],
  ])("replaces %s", async (_what, terse) => {
    const router = fakeRouter(terse);
    expect(await ensureRule(router.client, forward, await readTaggedRules(router.client))).toBe("replaced");
    expect(router.sent.slice(1)).toEqual([
      removeForwardRule(ID),
      addForwardRule({ port: 40001, dstAddress: "192.168.88.10", dstPort: 22, forwardId: ID }),
    ]);
  });

  it("refuses, as a permanent error, a stored value no command may carry", async () => {
    const router = fakeRouter([]);
    const error = await ensureRule(router.client, { ...forward, dstAddress: '10.0.0.1" ; /system reboot' }, []).catch(
      (e: unknown) => e,
    );
    expect(isPermanentJobError(error)).toBe(true);
    expect(router.sent).toEqual([]);
  });
});
