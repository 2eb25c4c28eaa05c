import { context, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import { startRouterOsSshServer } from "@fleet/router-simulator/routeros/routeros-ssh-server";
import { generateEd25519KeyPair } from "@fleet/shared";
import { InMemoryHostKeyStore } from "@fleet/tunnel-agent/routeros/host-key-store";
import { SshRouterOsConnector } from "@fleet/tunnel-agent/routeros/ssh-routeros-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/**
 * docs/operations.md "Tracing": SSH sessions and commands to routers are client spans; a command's
 * span names its menu path and verb, never its arguments (comments, addresses).
 */
const exporter = new InMemorySpanExporter();
const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
beforeAll(() => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(provider);
});
afterAll(async () => {
  await provider.shutdown();
  trace.disable();
  context.disable();
});

describe("SSH spans", () => {
  it("traces the session and each command, without the command's arguments", async () => {
    const key = generateEd25519KeyPair();
    const sim = await startRouterOsSshServer({
      host: "127.0.0.1",
      port: 0,
      lan: () => ({ host: "127.0.0.1", port: 9 }),
      authorizedKeys: [key.public],
      username: "fleet",
    });
    try {
      const connector = new SshRouterOsConnector({
        username: "fleet",
        privateKey: key.private,
        connectTimeoutMs: 5000,
        commandTimeoutMs: 5000,
        hostKeys: new InMemoryHostKeyStore(),
      });
      const router = await connector.connect({
        routerId: "0b6f1c1e-1111-4222-8333-444455556666",
        host: "127.0.0.1",
        port: sim.port,
      });
      await router.exec("/ip firewall nat add chain=dstnat comment=secret-comment");
      await expect(router.exec("bogus")).rejects.toThrow();
      await router.close();
    } finally {
      await sim.close();
    }
    const spans = exporter.getFinishedSpans();
    expect(spans.map((s) => s.name)).toEqual(["ssh connect", "ssh exec", "ssh exec"]);
    expect(spans[0]?.attributes["fleet.router_id"]).toBe("0b6f1c1e-1111-4222-8333-444455556666");
    expect(spans[1]?.attributes["routeros.command"]).toBe("/ip firewall nat add");
    expect(spans[2]?.status.code).toBe(2);
    expect(JSON.stringify(spans.map((s) => s.attributes))).not.toContain("secret-comment");
  });
});
