import { describe, expect, it } from "vitest";
import { createTestDatabase, makeUser } from "../testing/index.ts";

/**
 * Migration 008 on data written before it (docs/api.md "Routers and heartbeats"): routers keep a
 * reported address only where it is a unique host address of the default TUNNEL_NETWORK; SSH pins
 * move from host:port to the router now holding that address.
 */
describe("migration 008: tunnel addresses", () => {
  it("keeps unique in-network addresses, clears the rest, and re-keys host key pins per router", async () => {
    const db = await createTestDatabase({ migrateTo: "20261121-007-organization-external-ids" });
    try {
      const user = await makeUser(db);
      const reported: Record<string, string | null> = {
        kept: "100.64.0.10",
        keptToo: "100.127.255.254",
        dupA: "100.64.0.20",
        dupB: "100.64.0.20",
        loopback: "127.0.0.1",
        public: "8.8.8.8",
        networkAddress: "100.64.0.0",
        broadcast: "100.127.255.255",
        notCanonical: "100.64.0.010",
        garbage: "not an address",
        none: null,
      };
      const ids: Record<string, string> = {};
      for (const [name, tunnelIp] of Object.entries(reported)) {
        ids[name] = crypto.randomUUID();
        await db.query(
          `insert into routers (id, organization_id, team_id, name, tunnel_ip, heartbeat_token_hash, created_at)
           values (?, ?, ?, ?, ?, ?, now())`,
          [ids[name], user.organizationId, user.teamId, name, tunnelIp, crypto.randomUUID().replaceAll("-", "")],
        );
      }
      const pin = (host: string, port: number, fingerprint: string, createdAt: string) =>
        db.query(`insert into ssh_host_keys (id, host, port, fingerprint, created_at) values (?, ?, ?, ?, ?)`, [
          crypto.randomUUID(),
          host,
          port,
          fingerprint,
          createdAt,
        ]);
      await pin("100.64.0.10", 22, "SHA256:first", "2026-11-01T00:00:00Z");
      await pin("100.64.0.10", 2222, "SHA256:later", "2026-11-02T00:00:00Z");
      await pin("100.64.0.20", 22, "SHA256:duplicate", "2026-11-01T00:00:00Z");
      await pin("127.0.0.1", 22, "SHA256:loopback", "2026-11-01T00:00:00Z");

      await db.migrate();

      const rows = await db.query<{ name: string; tunnel_ip: string | null }>(
        "select name, tunnel_ip from routers order by name",
      );
      expect(Object.fromEntries(rows.map((r) => [r.name, r.tunnel_ip]))).toEqual({
        kept: "100.64.0.10",
        keptToo: "100.127.255.254",
        dupA: null,
        dupB: null,
        loopback: null,
        public: null,
        networkAddress: null,
        broadcast: null,
        notCanonical: null,
        garbage: null,
        none: null,
      });
      const pins = await db.query<{ router_id: string; fingerprint: string }>(
        "select router_id, fingerprint from ssh_host_keys",
      );
      expect(pins).toEqual([{ router_id: ids.kept, fingerprint: "SHA256:first" }]);

      // From now on an address is one router's.
      await expect(
        db.query("update routers set tunnel_ip = '100.64.0.10' where id = ?", [ids.keptToo]),
      ).rejects.toThrow(/routers_tunnel_ip_unique|duplicate key/);
    } finally {
      await db.close();
    }
  });
});
