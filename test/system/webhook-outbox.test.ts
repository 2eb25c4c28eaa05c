import { createHmac } from "node:crypto";
import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { createTestDatabase, type TestDatabase } from "@fleet/db/testing";
import { eventually } from "@fleet/shared/testing";
import { afterAll, describe, expect, it } from "vitest";
import { START_TIMEOUT_MS, spawnSystem, type SystemProcess, waitForOutput } from "./process-harness.ts";

/** A free port now (nothing listens on it until the receiver starts). */
const freePort = async (): Promise<number> => {
  const server = http.createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
};

/**
 * How long the restarted process may take to deliver: the first process may have tried the dead
 * target before it was killed (a refused connection fails at once), so the retry waits out the
 * queue's backoff (5 s, doubled per attempt); an attempt in flight at the kill stays "active" until its
 * 30 s expiry before it is retried. A minute covers both with room for a loaded machine.
 */
const DELIVERY_AFTER_RESTART_MS = 60_000;
/** Each of the two starts is bounded by `waitForOutput`'s default; the test's timeout is the sum. */
const TEST_TIMEOUT_MS = 2 * START_TIMEOUT_MS + DELIVERY_AFTER_RESTART_MS;

/**
 * docs/api.md "Audit log and webhooks": delivery is at least once. The process is killed with
 * SIGKILL after the change committed and before any delivery could happen (the target is down);
 * after a restart on the same data, the event still arrives, signed, with the audit entry's data.
 */
describe("webhook outbox survives kill -9", () => {
  let db: TestDatabase | undefined;
  const processes: SystemProcess[] = [];
  let receiver: http.Server | undefined;

  afterAll(async () => {
    for (const p of processes.reverse()) p.cleanup();
    receiver?.closeAllConnections();
    await new Promise((resolve) => (receiver ? receiver.close(resolve) : resolve(undefined)));
    await db?.close();
  });

  it(
    "delivers an event committed just before the process died",
    async () => {
      const env: Record<string, string> = {
        PORT: "0",
        HEARTBEAT_PORT: "0",
        STRIPE_EMULATOR_PORT: "0",
        LOG_LEVEL: "warn",
        AUTH_DEV_LOGIN: "true",
        WEBHOOK_ALLOW_PRIVATE: "true",
      };
      if (process.env.DATABASE_URL) {
        db = await createTestDatabase();
        env.DATABASE_URL = db.url ?? "";
      }
      const first = spawnSystem("apps/all-in-one/src/main.ts", env, { migrated: true });
      processes.push(first);
      const url = await waitForOutput(first, /API\s+(http:\/\/\S+)/);
      const login = (await (
        await fetch(`${url}/v1/auth/dev-login`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ email: "outbox@example.com" }),
        })
      ).json()) as { access_token: string };
      const headers = { authorization: `Bearer ${login.access_token}`, "content-type": "application/json" };
      const port = await freePort();
      const hook = (await (
        await fetch(`${url}/api/webhooks`, {
          method: "POST",
          headers,
          body: JSON.stringify({ url: `http://127.0.0.1:${port}/hook`, events: ["api_key.created"] }),
        })
      ).json()) as { data: { secret: string } };
      const created = await fetch(`${url}/v1/api-keys`, {
        method: "POST",
        headers,
        body: JSON.stringify({ name: "made before the crash", scopes: ["routers:read"] }),
      });
      expect(created.status).toBe(201);
      const key = (await created.json()) as { id: string };
      first.child.kill("SIGKILL");
      await first.exited;

      // The target comes up; the system restarts on the same data.
      const received: Array<{ headers: http.IncomingHttpHeaders; body: string }> = [];
      receiver = http.createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on("data", (c: Buffer) => chunks.push(c));
        req.on("end", () => {
          received.push({ headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
          res.writeHead(204).end();
        });
      });
      receiver.listen(port, "127.0.0.1");
      await once(receiver, "listening");
      const second = spawnSystem("apps/all-in-one/src/main.ts", { ...env, DATA_DIR: first.dataDir });
      processes.push(second);
      await waitForOutput(second, /API\s+(http:\/\/\S+)/);
      await eventually(() => received.length > 0, "the delivery after the restart", DELIVERY_AFTER_RESTART_MS);

      const [delivery] = received;
      const body = JSON.parse(delivery?.body ?? "{}");
      expect(body).toMatchObject({ type: "api_key.created", data: { target: { type: "api_key", id: key.id } } });
      // At least once: any repeat carries the same webhook-id.
      expect(new Set(received.map((r) => r.headers["webhook-id"])).size).toBe(1);
      const signed = `${delivery?.headers["webhook-id"]}.${delivery?.headers["webhook-timestamp"]}.${delivery?.body}`;
      const expected = createHmac("sha256", Buffer.from(hook.data.secret.replace(/^whsec_/, ""), "base64"))
        .update(signed)
        .digest("base64");
      expect(String(delivery?.headers["webhook-signature"]).split(" ")).toContain(`v1,${expected}`);
    },
    TEST_TIMEOUT_MS,
  );
});
