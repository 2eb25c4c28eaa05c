import { databaseFingerprint } from "@fleet/db/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiHarness, startApiHarness } from "../testing/api-harness.ts";

/** docs/api.md "Errors": a body whose content type is not JSON answers 415, on every transport. */
let h: ApiHarness;
let token: string;
beforeAll(async () => {
  h = await startApiHarness();
  token = (await h.login()).token;
});
afterAll(async () => {
  await h?.close();
});

const body = JSON.stringify({ name: "Media Co", email: "media@example.com", address: { country: "DE" } });
const NOT_JSON = [
  "application/vnd.api+json",
  "application/json-patch+json",
  "text/plain",
  "text/plain; charset=utf-8",
  "application/x-www-form-urlencoded",
  "application/xml",
  "multipart/form-data; boundary=x",
  "application/octet-stream",
];

const send = (path: string, type: string | undefined, payload = body) => {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (type !== undefined) headers["content-type"] = type;
  // fetch would name a type itself for a string body; a Uint8Array keeps the header as given.
  return fetch(`${h.api.url}${path}`, { method: "POST", headers, body: new TextEncoder().encode(payload) });
};

describe("415 for every non-JSON content type", () => {
  it.each([...NOT_JSON, undefined])("REST /v1 (%s): 415 in the /v1 shape, nothing written", async (type) => {
    const before = await databaseFingerprint(h.db);
    const res = await send("/v1/account", type);
    expect(res.status).toBe(415);
    expect(await res.json()).toEqual({
      message: expect.any(String),
      code: "unsupported_media_type",
      request_id: expect.any(String),
    });
    expect(await databaseFingerprint(h.db)).toBe(before);
  });

  it.each([...NOT_JSON, undefined])("REST /api (%s): 415 in the JSend shape, nothing written", async (type) => {
    const before = await databaseFingerprint(h.db);
    const res = await send("/api/routers", type, JSON.stringify({ name: "R" }));
    expect(res.status).toBe(415);
    expect(await res.json()).toEqual({
      status: "fail",
      message: expect.any(String),
      code: "unsupported_media_type",
      request_id: expect.any(String),
    });
    expect(await databaseFingerprint(h.db)).toBe(before);
  });

  it.each([...NOT_JSON, undefined])("tRPC, single and batched (%s): 415 in the tRPC shape", async (type) => {
    const before = await databaseFingerprint(h.db);
    for (const path of ["/trpc/account.create", "/trpc/account.create?batch=1"]) {
      const payload = path.includes("batch") ? JSON.stringify({ 0: JSON.parse(body) }) : body;
      const res = await send(path, type, payload);
      expect(res.status).toBe(415);
      const answer = (await res.json()) as { error: { data: { httpStatus: number; code: string } } };
      expect(answer.error.data).toMatchObject({ httpStatus: 415, code: "UNSUPPORTED_MEDIA_TYPE" });
    }
    expect(await databaseFingerprint(h.db)).toBe(before);
  });

  it("a non-UTF-8 charset of JSON is 415 too", async () => {
    const res = await send("/v1/account", "application/json; charset=latin1");
    expect(res.status).toBe(415);
    expect(await res.json()).toMatchObject({ code: "unsupported_media_type" });
  });

  it.each(["application/json", "application/json; charset=utf-8", "Application/JSON;charset=UTF-8"])(
    "%s is accepted on every transport",
    async (type) => {
      const { token: fresh } = await h.login();
      const rest = await fetch(`${h.api.url}/v1/account`, {
        method: "POST",
        headers: { authorization: `Bearer ${fresh}`, "content-type": type },
        body,
      });
      expect(rest.status).toBe(201);
      const trpc = await fetch(`${h.api.url}/trpc/account.update`, {
        method: "POST",
        headers: { authorization: `Bearer ${fresh}`, "content-type": type },
        body: JSON.stringify({ name: "Renamed" }),
      });
      expect(trpc.status).toBe(200);
    },
  );

  it("a POST without a body needs no content type", async () => {
    const { token: fresh } = await h.login();
    const res = await fetch(`${h.api.url}/v1/account/setup-intent`, {
      method: "POST",
      headers: { authorization: `Bearer ${fresh}` },
    });
    // No account yet: the no-account answer, not 415.
    expect(res.status).toBe(422);
  });
});
