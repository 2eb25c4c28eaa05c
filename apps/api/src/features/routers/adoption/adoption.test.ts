import { createHash } from "node:crypto";
import { Writable } from "node:stream";
import { HeartbeatsRepository } from "@fleet/db";
import { databaseFingerprint, makeAccount } from "@fleet/db/testing";
import { ADOPTION_OBJECTS, deviceModeMessage, ManualClock, readRouterOsString } from "@fleet/shared";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "../../../client.ts";
import { type ApiHarness, startApiHarness } from "../../../testing/api-harness.ts";

/**
 * docs/routeros.md "Adoption" over HTTP: the enroll answer's adoption, the one-time script URL
 * (200 until the first heartbeat with its token or one hour, then 410; unknown 404), and
 * re-adoption of a reset router. Heartbeats are written the way the daemon writes them
 * (HeartbeatsRepository), since the API test runs no daemon.
 */
const AGENT_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDYeZNA+HjieFBDz17CWpDwutIsZCeFyYXXjuMhRZVgK";
const clock = new ManualClock(Date.UTC(2026, 10, 23, 10, 0, 0));
const logLines: string[] = [];
let h: ApiHarness;

type Login = Awaited<ReturnType<ApiHarness["login"]>>;
interface Enrolled {
  router: { id: string };
  heartbeat_token: string;
  adoption: { command: string; url: string; expires_at: string };
}

const sha256 = (value: string) => createHash("sha256").update(value).digest("hex");

const billedUser = async (): Promise<Login> => {
  const user = await h.login();
  await makeAccount(h.db, user.organizationId);
  return user;
};

const enroll = async (user: Login, name = "Office"): Promise<Enrolled> => {
  const res = await h.request("POST", "/api/routers", { token: user.token, body: { name } });
  expect(res.status).toBe(201);
  return res.body.data as Enrolled;
};

/** GET an adoption URL as a router does: no headers at all. */
const fetchScript = async (url: string) => {
  const res = await fetch(url);
  return {
    status: res.status,
    type: res.headers.get("content-type"),
    cache: res.headers.get("cache-control"),
    text: await res.text(),
  };
};

/** A heartbeat made with `token`, written as the daemon's flush writes it. */
const beat = async (routerId: string, token: string, at: Date) =>
  new HeartbeatsRepository(h.db).applyHeartbeats(
    [{ routerId, tokenHash: sha256(token), seenAt: at, peer: "127.0.0.1" }],
    0,
  );

beforeAll(async () => {
  const logger = pino(
    { level: "info" },
    new Writable({
      write(chunk, _encoding, done) {
        logLines.push(String(chunk));
        done();
      },
    }),
  );
  h = await startApiHarness(
    {
      TUNNEL_SSH_PUBLIC_KEY: `${AGENT_KEY} agent@fleet`,
      TUNNEL_SSH_USER: "fleet.mgmt",
      TUNNEL_NETWORK: "100.64.0.0/10",
      HEARTBEAT_PUBLIC_URL: "https://hb.fleet.example:8443",
      HEARTBEAT_INTERVAL_MS: "30000",
      LOG_LEVEL: "info",
    },
    { clock, logger },
  );
});

afterAll(async () => {
  await h?.close();
});

describe("enrolling answers an adoption", () => {
  it("has a one-line command, a URL under the API and an expiry one hour out", async () => {
    const user = await billedUser();
    const { adoption, heartbeat_token: token } = await enroll(user);
    expect(adoption.url).toMatch(new RegExp(`^${h.api.url}/api/adoption/ad_[A-Za-z0-9_-]{43}$`));
    expect(adoption.expires_at).toBe("2026-11-23T11:00:00+00:00");
    expect(adoption.command).toBe(
      `/tool fetch url="${adoption.url}" dst-path=fleet-adopt.rsc; /import file-name=fleet-adopt.rsc; /file remove fleet-adopt.rsc`,
    );
    expect(adoption.command).not.toMatch(/\n/);
    expect(token).toMatch(/^hb_[A-Za-z0-9_-]{43}$/);
    // Only hashes are stored: neither token appears anywhere in the database.
    const adoptionToken = adoption.url.split("/").pop() ?? "";
    const rows = await h.db.query<{ token_hash: string }>("select token_hash from router_adoptions");
    expect(rows.map((r) => r.token_hash)).toContain(sha256(adoptionToken));
    const dump = JSON.stringify(await h.db.query("select * from router_adoptions, routers"));
    expect(dump).not.toContain(adoptionToken);
    expect(dump).not.toContain(token);
  });

  it("is served over tRPC too (routers.enroll)", async () => {
    const user = await billedUser();
    const client = createClient({ url: h.api.url, token: user.token });
    const enrolled = await client.routers.enroll.mutate({ name: "Via tRPC" });
    expect(enrolled.data.adoption.url).toMatch(/\/api\/adoption\/ad_/);
  });
});

describe("GET <adoption url>", () => {
  it("answers the script as text/plain without a bearer, as often as asked until the first heartbeat", async () => {
    const user = await billedUser();
    const { adoption, heartbeat_token: token } = await enroll(user);
    const first = await fetchScript(adoption.url);
    expect(first.status).toBe(200);
    expect(first.type).toBe("text/plain; charset=utf-8");
    expect(first.cache).toBe("no-store");
    expect(first.text).toContain(
      `/user add name="fleet.mgmt" group="${ADOPTION_OBJECTS.group}" address="100.64.0.0/10"`,
    );
    expect(first.text).toContain(`/user ssh-keys add user="fleet.mgmt" key="${AGENT_KEY}"`);
    expect(first.text).toContain("interval=30s");
    expect(first.text).toContain(`:error ${JSON.stringify(deviceModeMessage("fetch"))}`);
    // The heartbeat script is stored as a string: read it back to see what the router will run.
    const sourceAt = first.text.indexOf('source="') + "source=".length;
    const source = readRouterOsString(first.text, sourceAt).value;
    expect(source).toContain('/tool fetch url="https://hb.fleet.example:8443/v1/heartbeat" http-method=post');
    expect(source).toContain(`http-header-field="Authorization: Bearer ${token},Content-Type: application/json"`);
    expect(source).toContain("http-data=[:serialize to=json value=$hb]");
    // No secret but the router's own token and the agent's public key.
    expect(first.text).not.toMatch(/password|BEGIN|PRIVATE/i);
    const second = await fetchScript(adoption.url);
    expect(second.status).toBe(200);
    expect(second.text).toBe(first.text);
  });

  it("answers 410 once a heartbeat was made with the token it carries, saying nothing about the router", async () => {
    const user = await billedUser();
    const { router, adoption, heartbeat_token } = await enroll(user, "Secret Site");
    expect((await fetchScript(adoption.url)).status).toBe(200);
    await beat(router.id, heartbeat_token, clock.now());
    const gone = await fetchScript(adoption.url);
    expect(gone.status).toBe(410);
    expect(gone.cache).toBe("no-store");
    expect(JSON.parse(gone.text)).toEqual({
      status: "fail",
      message: expect.any(String),
      code: "gone",
      request_id: expect.any(String),
    });
    expect(gone.text).not.toContain(router.id);
    expect(gone.text).not.toContain("Secret Site");
  });

  it("works until one hour has passed: 59:59 later 200, 60:00 later 410", async () => {
    const user = await billedUser();
    const { adoption } = await enroll(user);
    clock.advance(3_599_000);
    expect((await fetchScript(adoption.url)).status).toBe(200);
    clock.advance(1_000);
    expect((await fetchScript(adoption.url)).status).toBe(410);
  });

  it("answers 404 for guessed, malformed and well-formed unknown tokens, with one body for all", async () => {
    const bodies = new Set<string>();
    for (const token of ["ad_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "nope", "ad_%22%24x", "hb_whatever"]) {
      const res = await fetchScript(`${h.api.url}/api/adoption/${token}`);
      expect(res.status).toBe(404);
      // Each answer names its own request (docs/operations.md "Metrics and probes"); the rest is one body.
      const { request_id: requestId, ...rest } = JSON.parse(res.text);
      expect(requestId).toEqual(expect.any(String));
      bodies.add(JSON.stringify(rest));
    }
    expect([...bodies]).toEqual([
      JSON.stringify({ status: "fail", message: "No adoption script here.", code: "not_found" }),
    ]);
  });

  it("never writes the token into the request log", async () => {
    const user = await billedUser();
    const { adoption } = await enroll(user);
    const token = adoption.url.split("/").pop() ?? "";
    await fetchScript(adoption.url);
    await fetchScript(`${h.api.url}/api/adoption/ad_BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB`);
    const logs = logLines.join("");
    expect(logs).toContain('"path":"/api/adoption/[redacted]"');
    expect(logs).not.toContain(token);
    expect(logs).not.toContain("BBBBBBBBBBBBBBBBBBBB");
  });

  it("never writes the token into the request log whatever the case, slashes or escapes of the path", async () => {
    const user = await billedUser();
    const { adoption } = await enroll(user);
    const token = adoption.url.split("/").pop() ?? "";
    const before = logLines.length;
    // Express matches paths case-insensitively: the script is served at these too.
    for (const path of [`/API/ADOPTION/${token}`, `/Api/Adoption/${token}`, `/api/ADOPTION/${token}/`]) {
      expect((await fetchScript(`${h.api.url}${path}`)).status, path).toBe(200);
    }
    for (const path of [
      `//api//adoption/${token}`,
      `/api/adoptio%6E/${token}`,
      `/API/%61doption/${token}`,
      `/api/elsewhere/${token}`,
      `/api/adoption/${token.replace("ad_", "ad%5F")}`,
    ]) {
      await fetchScript(`${h.api.url}${path}`);
    }
    const logs = logLines.slice(before).join("");
    expect(logs.match(/"msg":"request"/g)?.length).toBe(8);
    expect(logs).not.toContain(token.slice(3));
  });

  it.each([
    ['quotes "and" \\backslashes\\'],
    ["dollar $name and $(expr) and ?help"],
    ["brackets [/system reboot] and ; /user remove 0"],
    ["non-ASCII: Zürich ✓ 東京 🚀"],
    ["#comment {braces} `backquote`"],
  ])("keeps the router name %j inside one RouterOS string", async (name) => {
    const user = await billedUser();
    const { adoption } = await enroll(user, name);
    const { text } = await fetchScript(adoption.url);
    const line = text.split("\n").find((l) => l.startsWith(":log info "));
    expect(line).toBeDefined();
    const parsed = readRouterOsString(line ?? "", ":log info ".length);
    expect(parsed.end).toBe(line?.length);
    expect(parsed.value).toContain(`router ${name} (`);
  });
});

describe("POST /api/routers/{id}/adoption", () => {
  it("mints a new heartbeat token and URL; the old token and URL stop working", async () => {
    const user = await billedUser();
    const first = await enroll(user);
    await beat(first.router.id, first.heartbeat_token, clock.now());
    clock.advance(60_000);
    const res = await h.request("POST", `/api/routers/${first.router.id}/adoption`, { token: user.token });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      status: "success",
      data: { command: expect.stringContaining("/import"), url: expect.any(String), expires_at: expect.any(String) },
    });
    const next = res.body.data as Enrolled["adoption"];
    expect(next.url).not.toBe(first.adoption.url);
    // The router beat before this adoption: that does not use the new URL up.
    const script = await fetchScript(next.url);
    expect(script.status).toBe(200);
    const source = readRouterOsString(script.text, script.text.indexOf('source="') + "source=".length).value;
    const newToken = /Bearer (hb_[A-Za-z0-9_-]+),/.exec(source)?.[1] ?? "";
    expect(newToken).not.toBe(first.heartbeat_token);
    const [row] = await h.db.query<{ heartbeat_token_hash: string }>(
      "select heartbeat_token_hash from routers where id = $1",
      [first.router.id],
    );
    expect(row?.heartbeat_token_hash).toBe(sha256(newToken));
    expect((await fetchScript(first.adoption.url)).status).toBe(410);
  });

  it("never writes a heartbeat made with the replaced token: the new URL stays usable", async () => {
    const user = await billedUser();
    const { router, heartbeat_token: oldToken } = await enroll(user);
    const res = await h.request("POST", `/api/routers/${router.id}/adoption`, { token: user.token });
    const before = await databaseFingerprint(h.db);
    // A stale or stolen device beating with the old token, long after the re-adoption.
    const applied = await beat(router.id, oldToken, new Date(clock.now().getTime() + 60_000));
    expect(applied).toEqual({
      notable: [],
      gone: [],
      replaced: [{ routerId: router.id, tokenHash: sha256(oldToken) }],
    });
    expect(await databaseFingerprint(h.db)).toBe(before);
    expect((await fetchScript(res.body.data.url)).status).toBe(200);
  });

  it("does not count heartbeats stamped within 10 s of the re-adoption (host clocks may disagree)", async () => {
    const user = await billedUser();
    const { router } = await enroll(user);
    const res = await h.request("POST", `/api/routers/${router.id}/adoption`, { token: user.token });
    const issuedAt = clock.now().getTime();
    const script = await fetchScript(res.body.data.url);
    const source = readRouterOsString(script.text, script.text.indexOf('source="') + "source=".length).value;
    const newToken = /Bearer (hb_[A-Za-z0-9_-]+),/.exec(source)?.[1] ?? "";
    await beat(router.id, newToken, new Date(issuedAt + 9_999));
    expect((await fetchScript(res.body.data.url)).status).toBe(200);
    await beat(router.id, newToken, new Date(issuedAt + 10_000));
    expect((await fetchScript(res.body.data.url)).status).toBe(410);
  });

  it("answers 404 for unknown ids and other teams' routers, and 403 without routers:write; nothing changes", async () => {
    const owner = await billedUser();
    const { router } = await enroll(owner);
    const stranger = await billedUser();
    const readOnly = await h.login(undefined, { scope: "routers:read" });
    const before = await databaseFingerprint(h.db);
    for (const id of [router.id, "00000000-0000-4000-8000-000000000000", "not-a-uuid"]) {
      const res = await h.request("POST", `/api/routers/${id}/adoption`, { token: stranger.token });
      expect(res.status).toBe(404);
    }
    const forbidden = await h.request("POST", `/api/routers/${router.id}/adoption`, { token: readOnly.token });
    expect(forbidden.status).toBe(403);
    expect(await databaseFingerprint(h.db)).toBe(before);
  });

  it("is routers.adoption over tRPC", async () => {
    const user = await billedUser();
    const { router, adoption } = await enroll(user);
    const client = createClient({ url: h.api.url, token: user.token });
    const again = await client.routers.adoption.mutate({ router_id: router.id });
    expect(again.data.url).not.toBe(adoption.url);
    expect((await fetchScript(again.data.url)).status).toBe(200);
    expect((await fetchScript(adoption.url)).status).toBe(410);
  });
});

describe("without the agent's public key", () => {
  it("answers 503 for a valid URL and says what to set in the log, not to the caller", async () => {
    const lines: string[] = [];
    const logger = pino(
      { level: "error" },
      new Writable({
        write(chunk, _encoding, done) {
          lines.push(String(chunk));
          done();
        },
      }),
    );
    const bare = await startApiHarness({}, { logger });
    try {
      const user = await bare.login();
      await makeAccount(bare.db, user.organizationId);
      const res = await bare.request("POST", "/api/routers", { token: user.token, body: { name: "No key" } });
      expect(res.status).toBe(201);
      const script = await fetchScript(res.body.data.adoption.url);
      expect(script.status).toBe(503);
      expect(script.text).not.toMatch(/TUNNEL_SSH/);
      expect(lines.join("")).toContain("TUNNEL_SSH_PUBLIC_KEY");
    } finally {
      await bare.close();
    }
  });
});
