import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createTestDatabase, type TestDatabase } from "@fleet/db/testing";
import { eventually } from "@fleet/shared/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { START_TIMEOUT_MS, spawnSystem, type SystemProcess, waitForOutput } from "./process-harness.ts";

/**
 * docs/operations.md "Tracing": with OTEL_EXPORTER_OTLP_ENDPOINT set, `npm start` sends OTLP/HTTP
 * spans for HTTP requests, tRPC procedures, SQL statements, jobs and webhook deliveries, continues
 * a caller's `traceparent`, and writes the trace id into the request's log lines. The collector
 * is a local HTTP server started here that keeps what it receives.
 */
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: Array<{ key: string; value: Record<string, unknown> }>;
}
const received: OtlpSpan[] = [];
const services = new Set<string>();
let collector: Server;
let hooks: Server;
const hookBodies: string[] = [];
let db: TestDatabase | undefined;
let system: SystemProcess;
let url: string;

const listen = async (server: Server) => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as AddressInfo).port;
};

beforeAll(async () => {
  collector = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => {
      body += chunk.toString();
    });
    req.on("end", () => {
      if (req.url === "/v1/traces") {
        const message = JSON.parse(body) as {
          resourceSpans: Array<{
            resource: { attributes: Array<{ key: string; value: { stringValue?: string } }> };
            scopeSpans: Array<{ spans: OtlpSpan[] }>;
          }>;
        };
        for (const resource of message.resourceSpans) {
          const name = resource.resource.attributes.find((a) => a.key === "service.name")?.value.stringValue;
          if (name) services.add(name);
          for (const scope of resource.scopeSpans) received.push(...scope.spans);
        }
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  hooks = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => {
      body += chunk.toString();
    });
    req.on("end", () => {
      hookBodies.push(body);
      res.writeHead(204).end();
    });
  });
  const collectorPort = await listen(collector);
  await listen(hooks);
  const env: Record<string, string> = {
    PORT: "0",
    HEARTBEAT_PORT: "0",
    STRIPE_EMULATOR_PORT: "0",
    ENTRY_POINT_PORTS: "63380-63389",
    LOG_LEVEL: "info",
    WEBHOOK_ALLOW_PRIVATE: "true",
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${collectorPort}`,
  };
  if (process.env.DATABASE_URL) {
    db = await createTestDatabase();
    env.DATABASE_URL = db.url ?? "";
  }
  system = spawnSystem("apps/all-in-one/src/main.ts", env, { migrated: true });
  url = await waitForOutput(system, /API\s+(http:\/\/\S+)/);
}, START_TIMEOUT_MS);

afterAll(async () => {
  system?.cleanup();
  collector?.close();
  hooks?.close();
  await db?.close();
});

const attribute = (span: OtlpSpan, key: string) => span.attributes?.find((a) => a.key === key)?.value;

describe("OpenTelemetry tracing over OTLP/HTTP", () => {
  it("traces a request through its procedure and its SQL, continuing the caller's trace, with the trace id in its logs", async () => {
    const login = await fetch(`${url}/v1/auth/dev-login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: "traced@example.com" }),
    });
    const { access_token: token } = (await login.json()) as { access_token: string };
    const auth = { authorization: `Bearer ${token}`, "content-type": "application/json" };
    const created = await fetch(`${url}/v1/account`, {
      method: "POST",
      headers: auth,
      body: JSON.stringify({ name: "Traced", email: "billing@traced.example", address: { country: "DE" } }),
    });
    expect(created.status).toBe(201);

    const traceId = crypto.randomUUID().replaceAll("-", "");
    const parent = "00f067aa0ba902b7";
    const call = await fetch(`${url}/trpc/account.get`, {
      headers: { ...auth, traceparent: `00-${traceId}-${parent}-01` },
    });
    expect(call.status).toBe(200);

    const inTrace = await eventually(
      () => {
        const spans = received.filter((s) => s.traceId === traceId);
        // The server span ends after the response, so it may come in a later export than the others.
        const complete =
          spans.some((s) => s.kind === 2) &&
          spans.some((s) => s.name === "trpc account.get") &&
          spans.some((s) => s.kind === 3 && attribute(s, "db.query.text"));
        return complete ? spans : undefined;
      },
      "the request's spans at the collector",
      30_000,
    );
    const server = inTrace.find((s) => s.kind === 2);
    expect(server?.name).toBe("GET /trpc/account.get");
    expect(server?.parentSpanId).toBe(parent);
    const procedure = inTrace.find((s) => s.name === "trpc account.get");
    expect(procedure?.parentSpanId).toBe(server?.spanId);
    // SQL statements are client spans inside the trace, with their text and never their values.
    const sql = inTrace.filter((s) => s.kind === 3 && attribute(s, "db.query.text"));
    expect(sql.length).toBeGreaterThan(0);
    expect(JSON.stringify(sql)).not.toContain(token);
    expect(services).toContain("fleet");

    // The request's log line carries the trace id.
    await eventually(() => system.stdout().includes(`"trace_id":"${traceId}"`), "a log line with the trace id");
    const lines = system
      .stdout()
      .split("\n")
      .filter((l) => l.includes(`"trace_id":"${traceId}"`))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toContainEqual(
      expect.objectContaining({ msg: "request", path: "/trpc/account.get", trace_id: traceId }),
    );

    // A webhook's test event: a job span, and inside it the delivery's span.
    const hook = await fetch(`${url}/api/webhooks`, {
      method: "POST",
      headers: auth,
      body: JSON.stringify({ url: `http://127.0.0.1:${(hooks.address() as AddressInfo).port}/hook`, events: ["*"] }),
    });
    expect(hook.status).toBe(201);
    const { data } = (await hook.json()) as { data: { id: string } };
    expect((await fetch(`${url}/api/webhooks/${data.id}/test`, { method: "POST", headers: auth })).status).toBeLessThan(
      300,
    );
    const delivery = await eventually(
      () => received.find((s) => s.name === "webhook deliver"),
      "a webhook delivery span",
      30_000,
    );
    expect(hookBodies.length).toBeGreaterThan(0);
    // The job's span ends after the delivery's, so it may come in a later export.
    const job = await eventually(
      () => received.find((s) => s.spanId === delivery.parentSpanId),
      "the delivery's parent span",
      30_000,
    );
    expect(job?.name).toMatch(/^job /);
    expect(job?.kind).toBe(5);
    expect(attribute(delivery, "http.response.status_code")).toEqual({ intValue: 204 });
  });

  it("sends what is buffered when it stops", async () => {
    const before = received.length;
    await fetch(`${url}/v1/account`, { headers: { authorization: "Bearer nope" } });
    system.child.kill("SIGTERM");
    expect(await system.exited).toBe(0);
    expect(received.length).toBeGreaterThan(before);
  });
});
