import { describe, expect, it } from "vitest";
import { OEM_CATALOG_MAX_PRODUCTS, type TOemProduct, ZOemCatalog, ZOemInfo, ZOemProduct } from "./oem.schema.ts";

const product = (slug: string): TOemProduct => ({
  category: "Ethernet routers",
  slug,
  archived: false,
  name: "hEX",
  model: "RB750Gr3",
  short_description: "Five-port router.",
  product_details: "<p>Five ports.</p>",
  architecture: "MMIPS",
  cpu: "MT7621A",
  cpu_core_count: "2",
  cpu_nominal_frequency: null,
  switch_chip_model: null,
  router_os_license: "4",
  operating_system: "RouterOS v7",
  ram: "256 MB",
  storage_size: "16 MB",
  storage_type: "FLASH",
  mtbf: null,
  tested_ambient_temperature: null,
  price: "59.95",
  banner: "https://cdn.mikrotik.com/web-assets/rb_images/hex_hi_res.png",
  thumbnail: null,
  ports: [{ type: "Gigabit Ethernet", count: 5, speed_mbps: 1000 }],
  test_results: {
    ethernet: [{ mode: "Routing", config: "25 ip filter rules", packet_size: 1518, mbps: 2096.1, kpps: 172.6 }],
  },
  match_keys: ["RB750Gr3", "hEX"],
});

const firstIssue = (result: { success: boolean; error?: { issues: { path: PropertyKey[]; message: string }[] } }) =>
  result.error?.issues[0] ? `${result.error.issues[0].path.join(".")}: ${result.error.issues[0].message}` : "";

describe("OEM schemas", () => {
  it("accepts a complete product and strips match_keys from the info shape", () => {
    const parsed = ZOemInfo.parse(product("hex"));
    expect(parsed).not.toHaveProperty("match_keys");
    expect(parsed.price).toBe("59.95");
  });

  it.each([
    ["cpu_core_count", "two", "cpu_core_count: must be a whole number written as a string"],
    ["cpu_core_count", 2, "cpu_core_count"],
    ["price", "$59", "price: must be a USD amount such as 59.00"],
    ["price", "59.999", "price: must be a USD amount such as 59.00"],
    ["archived", "false", "archived"],
    ["banner", "ftp://cdn.mikrotik.com/x.png", "banner"],
    ["match_keys", [], "match_keys"],
    ["slug", "", "slug"],
  ])("refuses %s = %j", (field, value, expected) => {
    const result = ZOemProduct.safeParse({ ...product("hex"), [field]: value });
    expect(result.success).toBe(false);
    expect(firstIssue(result)).toContain(expected);
  });

  it("refuses an empty catalogue and duplicate slugs", () => {
    expect(firstIssue(ZOemCatalog.safeParse({ products: [] }))).toBe("products: the catalogue lists no products");
    expect(firstIssue(ZOemCatalog.safeParse({ products: [product("a"), product("a")] }))).toBe(
      'products.1.slug: duplicate slug "a"',
    );
  });

  it("takes at most OEM_CATALOG_MAX_PRODUCTS products", () => {
    const many = Array.from({ length: OEM_CATALOG_MAX_PRODUCTS + 1 }, (_, i) => product(`p${i}`));
    expect(ZOemCatalog.safeParse({ products: many.slice(0, 1) }).success).toBe(true);
    expect(ZOemCatalog.safeParse({ products: many.slice(0, OEM_CATALOG_MAX_PRODUCTS) }).success).toBe(true);
    expect(ZOemCatalog.safeParse({ products: many }).success).toBe(false);
  });
});
