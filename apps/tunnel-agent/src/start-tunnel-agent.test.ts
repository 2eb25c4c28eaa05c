import { createTestDatabase, makeRouter, makeUser, type TestDatabase } from "@fleet/db/testing";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadTunnelAgentConfig, startTunnelAgent } from "./start-tunnel-agent.ts";

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.close();
});

describe("tunnel agent start-up", () => {
  it("names the routers it will not connect to: no assigned address, or one outside TUNNEL_NETWORK", async () => {
    const user = await makeUser(db);
    const reachable = await makeRouter(db, user, { tunnelIp: "100.64.3.4" });
    const without = await makeRouter(db, user, { tunnelIp: null });
    const outside = await makeRouter(db, user, { tunnelIp: "127.0.0.1" });
    const lines: Array<Record<string, unknown>> = [];
    const logger = pino({ level: "info" }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const agent = await startTunnelAgent({
      config: loadTunnelAgentConfig({ DATA_DIR: "memory", ENTRY_POINT_PORTS: "46300-46309" }),
      db,
      logger,
      manualJobs: true,
    });
    await agent.close();
    const warnings = lines.filter((l) => String(l.msg).startsWith("routers without an assigned tunnel address"));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({
      count: 2,
      tunnelNetwork: "100.64.0.0/10",
      routers: expect.arrayContaining([
        { id: without.id, tunnelIp: null },
        { id: outside.id, tunnelIp: "127.0.0.1" },
      ]),
    });
    expect(JSON.stringify(warnings[0])).not.toContain(reachable.id);
  });
});
