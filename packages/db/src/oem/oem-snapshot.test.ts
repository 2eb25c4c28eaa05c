import { normalizeOemKey, ZOemCatalog, ZOemProduct } from "@fleet/shared";
import { describe, expect, it } from "vitest";
import raw from "./oem-snapshot.json" with { type: "json" };
import { loadOemSnapshot, oemMatchKeys } from "./oem-snapshot.ts";

const catalog = loadOemSnapshot();
const products = catalog.products;
const hardware = products.filter((p) => p.slug !== "chr");
/** docs/api.md: "may be null" only for these two; everything else is known for real hardware. */
const NULLABLE_FOR_HARDWARE = new Set(["cpu_nominal_frequency", "switch_chip_model"]);
const SPEC_FIELDS = [
  "category",
  "slug",
  "archived",
  "name",
  "model",
  "short_description",
  "product_details",
  "architecture",
  "cpu",
  "cpu_core_count",
  "cpu_nominal_frequency",
  "switch_chip_model",
  "router_os_license",
  "operating_system",
  "ram",
  "storage_size",
  "storage_type",
  "mtbf",
  "tested_ambient_temperature",
  "price",
  "banner",
  "thumbnail",
] as const;

describe("shipped OEM snapshot", () => {
  it("is a valid catalogue with at least 30 models", () => {
    expect(ZOemCatalog.safeParse(raw).success).toBe(true);
    expect(catalog.version).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(products.length).toBeGreaterThanOrEqual(30);
  });

  it.each(products.map((p) => [p.slug, p] as const))(
    "%s has every docs/api.md field in its format",
    (_slug, product) => {
      expect(ZOemProduct.safeParse(product).error?.issues ?? []).toEqual([]);
      const rawEntry = (raw as { products: Record<string, unknown>[] }).products.find((p) => p.slug === product.slug);
      for (const field of SPEC_FIELDS) expect(rawEntry, field).toHaveProperty(field);
      expect(product.cpu_core_count).toMatch(/^[1-9]\d*$/);
      expect(product.price).toMatch(/^\d+\.\d{2}$/);
      expect(Number(product.price)).toBeGreaterThan(0);
      expect(product.banner).toMatch(/^https:\/\/cdn\.mikrotik\.com\/web-assets\/rb_images\/[a-z0-9_]+_hi_res\.png$/);
      expect(product.thumbnail).toMatch(/^https:\/\/cdn\.mikrotik\.com\/web-assets\/rb_images\/[a-z0-9_]+_m\.png$/);
      expect(product.slug).toMatch(/^[a-z0-9_]+$/);
      if (product.slug !== "chr") {
        for (const field of SPEC_FIELDS) {
          if (!NULLABLE_FOR_HARDWARE.has(field)) expect(product[field], field).not.toBeNull();
        }
        expect(product.ports.length).toBeGreaterThan(0);
        expect(product.test_results.ethernet.length).toBeGreaterThan(0);
      }
    },
  );

  it("covers the product families and the Cloud Hosted Router", () => {
    const names = products.map((p) => p.name).join(" | ");
    for (const family of ["hEX", "hAP", "cAP", "wAP", "CRS", "CCR", "RB5009", "L009", "Chateau", "LtAP", "netPower"]) {
      expect(names, family).toContain(family);
    }
    const chr = products.find((p) => p.slug === "chr");
    expect(chr?.model).toBe("CHR");
    expect(chr?.match_keys).toContain("CHR");
    expect(new Set(products.map((p) => p.category)).size).toBeGreaterThanOrEqual(5);
    expect(products.some((p) => p.archived)).toBe(true);
  });

  it("matches every model code and board name to exactly one product", () => {
    const owner = new Map<string, string>();
    for (const product of products) {
      expect(product.match_keys.map(normalizeOemKey)).toContain(normalizeOemKey(product.model));
      for (const key of oemMatchKeys(product)) {
        expect(owner.get(key) ?? product.slug, `${key} is claimed twice`).toBe(product.slug);
        owner.set(key, product.slug);
      }
    }
    expect(owner.get("rb750gr3")).toBe("hex");
    expect(owner.get("rb5009ug+s+")).toBe("rb5009ug_s_in");
    expect(owner.get("hapax3")).toBe("hap_ax3");
    expect(owner.get("ccr20041g12s+2xs")).toBe("ccr2004_1g_12s_2xs");
    expect(owner.get("chr")).toBe("chr");
  });

  it("has internally consistent test results: Mbps = kpps x size x 8, within the ports' line rate", () => {
    for (const product of hardware) {
      const portMbps = product.ports.reduce((sum, p) => sum + p.count * p.speed_mbps, 0);
      for (const row of [...product.test_results.ethernet, ...(product.test_results.ipsec ?? [])]) {
        const label = `${product.slug} ${row.mode} ${row.config} ${row.packet_size}`;
        expect(Math.abs(row.mbps - (row.kpps * row.packet_size * 8) / 1000), label).toBeLessThanOrEqual(1);
        expect(row.mbps, label).toBeLessThanOrEqual(portMbps);
        expect(row.kpps, label).toBeGreaterThan(0);
      }
      // Filtering costs throughput: never faster than the fast path at the same size.
      for (const size of [64, 512, 1518]) {
        const at = (mode: string, config: string) =>
          product.test_results.ethernet.find((r) => r.mode === mode && r.config === config && r.packet_size === size)
            ?.kpps;
        const fast = at("Routing", "none (fast path)");
        const filtered = at("Routing", "25 ip filter rules");
        expect(fast, `${product.slug} ${size}`).toBeDefined();
        expect(filtered ?? Number.POSITIVE_INFINITY).toBeLessThanOrEqual(fast ?? 0);
      }
    }
  });
});
