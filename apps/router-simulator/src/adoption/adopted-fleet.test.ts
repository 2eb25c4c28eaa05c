import { eventually } from "@fleet/shared/testing";
import { once } from "node:events";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { adoptionCommand, adoptionScript, deviceModeMessage } from "@fleet/shared";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ArgsError, parseArgs } from "../cli-args.ts";
import { generateEd25519KeyPair } from "@fleet/shared";
import { startAdoptedFleet } from "./adopted-fleet.ts";
import { adoptedStateFile, readAdoptedState, writeAdoptedState } from "./adopted-state.ts";

/**
 * A stand-in API and heartbeat daemon on one loopback server: it serves adoption scripts made by
 * the real generator and records the heartbeats the routers' schedulers post.
 */
const TOKEN = "hb_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG";
const posts: Array<{ headers: http.IncomingHttpHeaders; body: string; remote: string | undefined }> = [];
let server: http.Server;
/** The system forgot the routers (deleted, or its database reset): heartbeats answer 401. */
let refuseHeartbeats = false;
let base: string;

beforeAll(async () => {
  const agentPublicKey = generateEd25519KeyPair().public.trim().split(" ").slice(0, 2).join(" ");
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (req.method === "GET" && req.url?.startsWith("/api/adoption/")) {
        res.setHeader("content-type", "text/plain");
        res.end(
          adoptionScript({
            routerId: req.url.slice("/api/adoption/".length),
            routerName: "Fleet test",
            heartbeatUrl: `${base}/v1/heartbeat`,
            heartbeatToken: TOKEN,
            intervalMs: 50,
            sshUser: "mgmt",
            tunnelNetwork: "127.0.0.0/8",
            agentPublicKey,
          }),
        );
        return;
      }
      posts.push({ headers: req.headers, body: Buffer.concat(chunks).toString(), remote: req.socket.remoteAddress });
      if (refuseHeartbeats) {
        res.statusCode = 401;
        res.end('{"message":"unknown token"}');
        return;
      }
      res.setHeader("content-type", "application/json");
      res.end('{"type":"ack","interval_ms":50}');
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe("startAdoptedFleet", () => {
  it("adopts every router with its command; their schedulers keep posting from their tunnel addresses", async () => {
    const routers = ["a", "b"].map((id) => ({
      router_id: `r-${id}`,
      adoption_command: adoptionCommand(`${base}/api/adoption/r-${id}`),
    }));
    const failures: string[] = [];
    const fleet = await startAdoptedFleet({
      routers,
      deviceModes: { 1: { fetch: false, scheduler: true } },
      onError: (_router, error) => failures.push(error.message),
    });
    try {
      expect(fleet.summary()).toMatchObject({ routers: 2, adopted: 1 });
      expect(failures).toHaveLength(1);
      expect(failures[0]).toContain("not allowed by device-mode");
      // The scheduler, not the adoption, posts the later ones.
      const first = posts.length;
      await eventually(() => posts.length > first, "another heartbeat", 5_000);
      for (const post of posts) {
        expect(post.headers.authorization).toBe(`Bearer ${TOKEN}`);
        expect(post.headers["content-type"]).toBe("application/json");
        expect(post.remote).toBe("127.0.1.1");
        expect(JSON.parse(post.body)).toMatchObject({ type: "heartbeat", identity: "sim-0001", hardwareboard: true });
      }
    } finally {
      await fleet.close();
    }
    expect(deviceModeMessage("fetch")).toContain("physical button press");
  });

  it("stops a router whose device-mode forbids the scheduler before the script changes anything", async () => {
    const failures: string[] = [];
    const fleet = await startAdoptedFleet({
      routers: [{ router_id: "r-c", adoption_command: adoptionCommand(`${base}/api/adoption/r-c`) }],
      deviceModes: { 0: { fetch: true, scheduler: false } },
      onError: (_router, error) => failures.push(error.message),
    });
    try {
      expect(failures[0]).toContain(deviceModeMessage("scheduler"));
      const device = fleet.routers[0]?.device;
      expect(device?.tables.user.map((u) => u.props.name)).toEqual(["admin"]);
      expect(device?.tables["system scheduler"]).toEqual([]);
    } finally {
      await fleet.close();
    }
  });
});

describe("adopted routers across runs", () => {
  it("come back from the state file: they boot with their configuration and beat at once, nothing enrolled", async () => {
    const first = await startAdoptedFleet({
      routers: [
        { router_id: "r-d", adoption_command: adoptionCommand(`${base}/api/adoption/r-d`), identity: "sim-rd" },
      ],
    });
    // A firmware change upgraded it during the run: the next run boots the upgraded version.
    const [router] = first.routers;
    if (router) router.device.version = "7.16.2 (stable)";
    const saved = first.saved();
    await first.close();
    expect(saved).toEqual([
      expect.objectContaining({
        router_id: "r-d",
        tunnel_ip: "127.0.1.1",
        identity: "sim-rd",
        version: "7.16.2 (stable)",
      }),
    ]);
    const dir = mkdtempSync(path.join(tmpdir(), "h21-sim-state-"));
    try {
      const file = adoptedStateFile(dir);
      writeAdoptedState(file, saved);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      const before = posts.length;
      const enrolled: number[] = [];
      const again = await startAdoptedFleet({
        routers: readAdoptedState(file),
        reenroll: async (index) => {
          enrolled.push(index);
          return { router_id: "never", adoption_command: "" };
        },
      });
      try {
        expect(again.summary()).toMatchObject({ routers: 1, adopted: 1, resumed: 1, reenrolled: 0 });
        expect(enrolled).toEqual([]);
        // The scheduler's startup run beat during boot, before any interval passed.
        expect(posts.length).toBeGreaterThan(before);
        expect(JSON.parse(posts.at(-1)?.body ?? "{}")).toMatchObject({ identity: "sim-rd" });
        expect(again.routers[0]?.device.version).toBe("7.16.2 (stable)");
      } finally {
        await again.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a router whose token is refused is enrolled and adopted again in its place", async () => {
    const first = await startAdoptedFleet({
      routers: [{ router_id: "r-f", adoption_command: adoptionCommand(`${base}/api/adoption/r-f`) }],
    });
    const saved = first.saved();
    await first.close();
    refuseHeartbeats = true;
    const enrolled: number[] = [];
    try {
      const again = await startAdoptedFleet({
        routers: saved,
        reenroll: async (index) => {
          enrolled.push(index);
          refuseHeartbeats = false;
          return {
            router_id: "r-g",
            adoption_command: adoptionCommand(`${base}/api/adoption/r-g`),
            tunnel_ip: "127.0.1.9",
          };
        },
      });
      try {
        expect(enrolled).toEqual([0]);
        expect(again.summary()).toMatchObject({ routers: 1, adopted: 1, resumed: 0, reenrolled: 1 });
        expect(again.routers.map((r) => [r.routerId, r.tunnelIp])).toEqual([["r-g", "127.0.1.9"]]);
        expect(again.saved().map((r) => r.router_id)).toEqual(["r-g"]);
      } finally {
        await again.close();
      }
    } finally {
      refuseHeartbeats = false;
    }
  });
});

describe("--adopt", () => {
  it("is a flag of npm run simulate that does not mix with token files or behaviours", () => {
    expect(parseArgs(["--routers", "3", "--adopt"]).adopt).toBe(true);
    expect(parseArgs(["--routers", "3"]).adopt).toBe(false);
    expect(() => parseArgs(["--routers", "3", "--adopt", "--token-file", "x.json"])).toThrow(ArgsError);
    expect(() => parseArgs(["--routers", "3", "--adopt", "--silent", "1"])).toThrow(ArgsError);
  });
});
