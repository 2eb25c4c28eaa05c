import { loadOemSnapshot, OemRepository, queryOf } from "@fleet/db";
import { createTestDatabase, databaseFingerprint, makeRouter, makeUser, type TestDatabase } from "@fleet/db/testing";
import { ZOemInfo } from "@fleet/shared";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rejection } from "../../testing/rejections.ts";
import { OemService } from "./oem.service.ts";

// The service tier (docs/contributing.md "Add a test"): OemService on a real database with the
// real OEM repository and the shipped catalogue; nothing is faked.

let db: TestDatabase;
let oem: OemService;
const snapshot = loadOemSnapshot();
const bySlug = (slug: string) => {
  const product = snapshot.products.find((p) => p.slug === slug);
  if (!product) throw new Error(`snapshot lacks ${slug}`);
  return product;
};

beforeAll(async () => {
  db = await createTestDatabase();
  const catalog = new OemRepository(queryOf(db));
  await db.transaction((query) => new OemRepository(query).installSnapshot(snapshot, new Date()));
  oem = new OemService({ catalog });
});
afterAll(async () => {
  await db?.close();
});

/** The not-found error of a lookup that leaves the database as it was. */
const notFound = async (teamId: string, routerId: string) => {
  const before = await databaseFingerprint(db);
  const error = await rejection(oem.forRouter(teamId, routerId));
  expect(await databaseFingerprint(db)).toBe(before);
  expect(error.status).toBe(404);
  return error.message;
};

describe("OemService.forRouter", () => {
  it("answers the catalogue entry of the router's model, without its match keys", async () => {
    const owner = await makeUser(db);
    const router = await makeRouter(db, owner, { model: "RB5009UG+S+", boardName: "RB5009UG+S+" });
    const answer = await oem.forRouter(owner.teamId, router.id);
    expect(ZOemInfo.strict().safeParse(answer).success).toBe(true);
    const { match_keys: _internal, ...expected } = bySlug("rb5009ug_s_in");
    expect(answer).toEqual(expected);
    expect(answer).not.toHaveProperty("match_keys");
    expect(answer).toMatchObject({
      slug: "rb5009ug_s_in",
      archived: false,
      cpu_core_count: "4",
      price: "219.00",
      ports: [
        { type: "Gigabit Ethernet", count: 7, speed_mbps: 1000 },
        { type: "2.5G Ethernet", count: 1, speed_mbps: 2500 },
        { type: "SFP+", count: 1, speed_mbps: 10000 },
      ],
    });
    const filtered = answer.test_results.ethernet.find(
      (r) => r.mode === "Routing" && r.config === "25 ip filter rules" && r.packet_size === 1518,
    );
    expect(filtered?.mbps).toBeGreaterThan(1000);
  });

  it("matches by board name in any spelling, and virtual instances get CHR", async () => {
    const owner = await makeUser(db);
    const cases = [
      { model: "", boardName: "hap AX^3", slug: "hap_ax3" },
      { model: "RB750Gr3", boardName: "hEX", slug: "hex" },
      { model: "", boardName: "CHR QEMU Standard PC (Q35 + ICH9, 2009)", slug: "chr" },
    ];
    for (const c of cases) {
      const router = await makeRouter(db, owner, { model: c.model, boardName: c.boardName });
      expect((await oem.forRouter(owner.teamId, router.id)).slug, c.boardName).toBe(c.slug);
    }
    const chr = await makeRouter(db, owner, { model: "CHR", boardName: "CHR" });
    expect(await oem.forRouter(owner.teamId, chr.id)).toMatchObject({
      model: "CHR",
      mtbf: null,
      cpu_nominal_frequency: null,
      ports: [],
    });
  });

  it("another team's router is not found, exactly like an unknown or malformed id", async () => {
    const owner = await makeUser(db);
    const stranger = await makeUser(db);
    const router = await makeRouter(db, owner, { model: "RB750Gr3", boardName: "hEX" });
    expect((await oem.forRouter(owner.teamId, router.id)).slug).toBe("hex");
    for (const id of [router.id, crypto.randomUUID(), "not-a-uuid", "x".repeat(300), "' or '1'='1"]) {
      expect(await notFound(stranger.teamId, id), id).toBe("Router not found.");
    }
  });

  it("says which model has no data, or that none was reported", async () => {
    const owner = await makeUser(db);
    const cases: Array<[string, string, string]> = [
      ["RB951G-2HnD", "RB951G-2HnD", "No manufacturer data for model RB951G-2HnD."],
      ["RB951G-2HnD", "rb951g-2hnd", "No manufacturer data for model RB951G-2HnD."],
      ["RB999X", "Mystery Board", "No manufacturer data for model RB999X (board name Mystery Board)."],
      ["", "Mystery Board", "No manufacturer data for model Mystery Board."],
      ["RB999X", "  ", "No manufacturer data for model RB999X."],
      ["", "", "No manufacturer data for this router: it has not reported its model yet."],
    ];
    for (const [model, boardName, message] of cases) {
      const router = await makeRouter(db, owner, { model, boardName });
      expect(await notFound(owner.teamId, router.id)).toBe(message);
    }
  });

  it("echoes a reported name of the longest length a router can store (100) whole", async () => {
    // routers.model and board_name are varchar(100), so the cut at 100 (MAX_ECHO) never shows here.
    const owner = await makeUser(db);
    const longest = `Z${"9".repeat(99)}`;
    const router = await makeRouter(db, owner, { model: longest, boardName: `${"Y".repeat(100)}` });
    expect(await notFound(owner.teamId, router.id)).toBe(
      `No manufacturer data for model ${longest} (board name ${"Y".repeat(100)}).`,
    );
  });
});
