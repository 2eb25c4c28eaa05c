import type { TOemCatalog, TOemProduct } from "@fleet/shared";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadOemSnapshot, snapshotSource } from "../oem/oem-snapshot.ts";
import { queryOf } from "../database.ts";
import { createTestDatabase, databaseFingerprint, makeRouter, makeUser, type TestDatabase } from "../testing/index.ts";
import { OemRepository } from "./oem.repository.ts";

const snapshot = loadOemSnapshot();
const NOW = new Date("2026-11-21T12:00:00Z");

const entry = (slug: string, overrides: Partial<TOemProduct> = {}): TOemProduct => {
  const base = snapshot.products.find((p) => p.slug === "hex");
  if (!base) throw new Error("snapshot lacks hex");
  return { ...base, slug, name: `Test ${slug}`, model: `TEST-${slug}`, match_keys: [`TEST-${slug}`], ...overrides };
};

let db: TestDatabase;
let repo: OemRepository;

beforeAll(async () => {
  db = await createTestDatabase();
  repo = new OemRepository(queryOf(db));
});
afterAll(async () => {
  await db.close();
});

describe("OemRepository matching (seeded snapshot)", () => {
  it("the migration seeds the shipped snapshot", async () => {
    const status = await repo.status();
    expect(status.count).toBe(snapshot.products.length);
    expect(status.source).toBe(`snapshot:${snapshot.version}`);
    expect(status.updatedAt).toBeInstanceOf(Date);
  });

  it.each([
    ["RB750Gr3", "", "hex"],
    ["", "hEX", "hex"],
    ["rb750gr3", "whatever", "hex"],
    ["RB5009UG+S+", "RB5009UG+S+", "rb5009ug_s_in"],
    ["rb5009ug+s+in", "", "rb5009ug_s_in"],
    ["", "hAP ax^3", "hap_ax3"],
    ["C53UiG+5HPaxD2HPaxD", "hAP ax^3", "hap_ax3"],
    ["", "HAP AX3", "hap_ax3"],
    ["", "hAP ax³", "hap_ax3"],
    ["  hap  ax^3  ", "", "hap_ax3"],
    ["ccr2004 1g 12s+2xs", "", "ccr2004_1g_12s_2xs"],
    ["CCR2004-1G-12S+2XS", "CCR2004-1G-12S+2XS", "ccr2004_1g_12s_2xs"],
    ["", "CHR", "chr"],
    ["", "CHR QEMU Standard PC (i440FX + PIIX, 1996)", "chr"],
    ["x86", "CHR VMware Virtual Platform", "chr"],
  ])("model %j / board %j -> %s", async (model, board, slug) => {
    expect((await repo.findForRouter(model, board))?.slug).toBe(slug);
  });

  it("the model wins over the board name", async () => {
    expect((await repo.findForRouter("E50UG", "hEX"))?.slug).toBe("hex_refresh");
    expect((await repo.findForRouter("RB750Gr3", "hEX refresh"))?.slug).toBe("hex");
  });

  it("a shared model code falls through to the board name", async () => {
    expect((await repo.findForRouter("S53UG+5HaxD2HaxD", "Chateau LTE18 ax"))?.slug).toBe("chateau_lte18_ax");
    expect((await repo.findForRouter("S53UG+5HaxD2HaxD", "Chateau 5G ax"))?.slug).toBe("chateau_5g_ax");
  });

  it("returns the whole document, unknown models return null", async () => {
    const hex = await repo.findForRouter("RB750Gr3", "");
    expect(hex).toEqual(snapshot.products.find((p) => p.slug === "hex"));
    expect(await repo.findForRouter("RB951G-2HnD", "RB951G-2HnD")).toBeNull();
    expect(await repo.findForRouter("", "")).toBeNull();
    expect(await repo.findForRouter("hEX'; drop table oem_products; --", "?")).toBeNull();
    expect((await repo.status()).count).toBe(snapshot.products.length);
  });

  it("routerModel answers only for the router's own team", async () => {
    const owner = await makeUser(db);
    const stranger = await makeUser(db);
    const router = await makeRouter(db, owner, { model: "RB750Gr3", boardName: "hEX" });
    expect(await repo.routerModel(owner.teamId, router.id)).toEqual({ model: "RB750Gr3", boardName: "hEX" });
    expect(await repo.routerModel(stranger.teamId, router.id)).toBeNull();
    expect(await repo.routerModel(owner.teamId, crypto.randomUUID())).toBeNull();
    expect(await repo.routerModel(owner.teamId, "not-a-uuid")).toBeNull();
    expect(await repo.routerModel(owner.teamId, `${router.id}x`)).toBeNull();
  });
});

describe("OemRepository replacing the catalogue", () => {
  it("replaceAll swaps everything at once and re-keys the entries", async () => {
    const catalog: TOemCatalog = {
      version: "test",
      products: [entry("alpha", { match_keys: ["ALPHA-1", "Alpha Board"] }), entry("beta")],
    };
    expect(
      await db.transaction((query) =>
        new OemRepository(query).replaceAll(catalog, "https://vendor.example/catalog.json", NOW),
      ),
    ).toBe(2);
    expect(await repo.status()).toEqual({ count: 2, source: "https://vendor.example/catalog.json", updatedAt: NOW });
    expect((await repo.findForRouter("", "alpha board"))?.slug).toBe("alpha");
    expect((await repo.findForRouter("test-beta", ""))?.slug).toBe("beta");
    expect(await repo.findForRouter("RB750Gr3", "hEX")).toBeNull();
  });

  it("prefers a current model over an archived one claiming the same key", async () => {
    await db.transaction((query) =>
      new OemRepository(query).replaceAll(
        { products: [entry("old", { archived: true, match_keys: ["SAME"] }), entry("new", { match_keys: ["SAME"] })] },
        "https://vendor.example/catalog.json",
        NOW,
      ),
    );
    expect((await repo.findForRouter("same", ""))?.slug).toBe("new");
  });

  it("a failing replacement leaves the previous catalogue untouched", async () => {
    await db.transaction((query) =>
      new OemRepository(query).replaceAll({ products: [entry("kept")] }, "https://vendor.example/catalog.json", NOW),
    );
    const before = await databaseFingerprint(db);
    // Duplicate slugs get past a caller that skipped validation; the primary key stops them.
    await expect(
      db.transaction((query) =>
        new OemRepository(query).replaceAll({ products: [entry("dup"), entry("dup")] }, "x", NOW),
      ),
    ).rejects.toThrow();
    expect(await databaseFingerprint(db)).toBe(before);
    expect((await repo.findForRouter("TEST-kept", ""))?.slug).toBe("kept");
  });

  it("installSnapshot never overwrites refreshed data", async () => {
    expect(await db.transaction((query) => new OemRepository(query).installSnapshot(snapshot, NOW))).toBe(false);
    expect((await repo.status()).source).toBe("https://vendor.example/catalog.json");
  });

  it("installSnapshot replaces an older snapshot, and is a no-op for the same one", async () => {
    await db.transaction((query) =>
      new OemRepository(query).replaceAll(
        { version: "2000-01-01", products: [entry("ancient")] },
        "snapshot:2000-01-01",
        NOW,
      ),
    );
    expect(await db.transaction((query) => new OemRepository(query).installSnapshot(snapshot, NOW))).toBe(true);
    expect(await repo.status()).toEqual({
      count: snapshot.products.length,
      source: snapshotSource(snapshot),
      updatedAt: NOW,
    });
    const before = await databaseFingerprint(db);
    expect(
      await db.transaction((query) =>
        new OemRepository(query).installSnapshot(snapshot, new Date(NOW.getTime() + 1000)),
      ),
    ).toBe(false);
    expect(await databaseFingerprint(db)).toBe(before);
  });

  it("installSnapshot fills an empty table", async () => {
    await db.query("delete from oem_products");
    expect(await repo.status()).toEqual({ count: 0, source: null, updatedAt: null });
    expect(await db.transaction((query) => new OemRepository(query).installSnapshot(snapshot, NOW))).toBe(true);
    expect((await repo.findForRouter("", "CHR"))?.slug).toBe("chr");
  });
});
