import { makeRouter } from "@fleet/db/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiHarness, startApiHarness } from "../../testing/api-harness.ts";

let h: ApiHarness;

beforeAll(async () => {
  h = await startApiHarness();
});

afterAll(async () => {
  await h?.close();
});

describe("POST /api/routers/{router_id}/backups", () => {
  it("answers 202 with the job; a backup still waiting is the one answered again (one read per burst)", async () => {
    const user = await h.login();
    const router = await makeRouter(h.db, user);
    const first = await h.request("POST", `/api/routers/${router.id}/backups`, { token: user.token });
    expect(first.status).toBe(202);
    expect(first.body).toEqual({ status: "success", data: { job_id: expect.any(String) } });
    const second = await h.request("POST", `/api/routers/${router.id}/backups`, { token: user.token });
    expect(second.body.data.job_id).toBe(first.body.data.job_id);
    const jobs = await h.db.query<{ n: number }>(
      "select count(*)::int as n from pgboss.job where name = 'router.jobs' and data->>'router_id' = $1",
      [router.id],
    );
    expect(jobs[0]?.n).toBe(1);
    // Another router's backup is its own job.
    const other = await makeRouter(h.db, user);
    const third = await h.request("POST", `/api/routers/${other.id}/backups`, { token: user.token });
    expect(third.body.data.job_id).not.toBe(first.body.data.job_id);
  });
});
