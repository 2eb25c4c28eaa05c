import { z } from "zod";
import { successEnvelope } from "./common.schema.ts";
import { textRule } from "../rules/text-rules.ts";

/**
 * Manufacturer (OEM) data of a router model (docs/api.md "OEM Information"). The the API doc's columns are
 * strings except `archived`; identity columns are always present, the rest may be null because
 * "data for particular hardware may not exist" (a virtual instance has no MTBF, say).
 * `ports`, `wireless` and `test_results` are the port-speed and test-speed data the API doc allows as
 * additional fields, for rightsizing.
 */

const nullableText = (max: number) => z.string().max(max).nullable();

/** A group of identical physical ports. */
export const ZOemPort = z
  .object({
    /** As the vendor names it: "Gigabit Ethernet", "2.5G Ethernet", "SFP+", "QSFP28", ... */
    type: z.string().min(1).max(100),
    count: z.number().int().min(1).max(1024),
    /** Line rate of one port in Mbit/s. */
    speed_mbps: z.number().int().min(1).max(1_000_000),
  })
  .meta({ id: "OemPort" });
export type TOemPort = z.infer<typeof ZOemPort>;

/** One radio of a wireless model. */
export const ZOemWireless = z
  .object({
    band: z.string().min(1).max(50),
    standards: z.string().min(1).max(100),
    chains: z.number().int().min(1).max(16),
    max_data_rate_mbps: z.number().int().min(1).max(100_000),
  })
  .meta({ id: "OemWireless" });
export type TOemWireless = z.infer<typeof ZOemWireless>;

/** One row of the vendor's published throughput tables. */
export const ZOemTestResult = z
  .object({
    /** "Bridging", "Routing", or the IPsec tunnel mode ("Single tunnel", "256 tunnels"). */
    mode: z.string().min(1).max(100),
    /** What was configured: "none (fast path)", "25 ip filter rules", "AES-128-CBC + SHA1", ... */
    config: z.string().min(1).max(200),
    /** Frame size in bytes. */
    packet_size: z.number().int().min(1).max(16_384),
    mbps: z.number().nonnegative(),
    kpps: z.number().nonnegative(),
  })
  .meta({ id: "OemTestResult" });
export type TOemTestResult = z.infer<typeof ZOemTestResult>;

export const ZOemTestResults = z
  .object({
    ethernet: z.array(ZOemTestResult).max(200),
    ipsec: z.array(ZOemTestResult).max(200).optional(),
  })
  .meta({ id: "OemTestResults" });
export type TOemTestResults = z.infer<typeof ZOemTestResults>;

/** The OEM Information object as the API answers it. */
export const ZOemInfo = z
  .object({
    category: z.string().min(1).max(100),
    slug: z.string().min(1).max(100),
    archived: z.boolean(),
    name: z.string().min(1).max(200),
    model: z.string().min(1).max(100),
    short_description: nullableText(1000),
    /** May contain simple HTML markup, as the vendor publishes it. */
    product_details: nullableText(20_000),
    architecture: nullableText(100),
    cpu: nullableText(200),
    /** Number of cores, as a string ("4"). */
    cpu_core_count: z.string().regex(/^\d+$/, { error: "must be a whole number written as a string" }).nullable(),
    cpu_nominal_frequency: nullableText(100),
    switch_chip_model: nullableText(200),
    router_os_license: nullableText(100),
    operating_system: nullableText(100),
    ram: nullableText(100),
    storage_size: nullableText(100),
    storage_type: nullableText(100),
    mtbf: nullableText(200),
    tested_ambient_temperature: nullableText(200),
    /** Recommended retail price in USD, as a decimal string ("59.00"). */
    price: z
      .string()
      .regex(/^\d+(\.\d{1,2})?$/, { error: "must be a USD amount such as 59.00" })
      .nullable(),
    banner: z
      .url({ protocol: /^https?$/ })
      .max(2000)
      .nullable(),
    thumbnail: z
      .url({ protocol: /^https?$/ })
      .max(2000)
      .nullable(),
    ports: z.array(ZOemPort).max(50),
    wireless: z.array(ZOemWireless).max(10).optional(),
    test_results: ZOemTestResults,
  })
  .meta({ id: "OemInfo" });
export type TOemInfo = z.infer<typeof ZOemInfo>;

/**
 * One catalogue entry: the OEM Information plus the names RouterOS reports for the model
 * (`/system resource` board-name, `/system routerboard` model, product codes), used to match a
 * router to its entry.
 */
export const ZOemProduct = ZOemInfo.extend({
  match_keys: z.array(z.string().min(1).max(100)).min(1).max(20),
}).meta({ id: "OemProduct" });
export type TOemProduct = z.infer<typeof ZOemProduct>;

/** Maximum catalogue size accepted from a refresh (MikroTik sells a few hundred models). */
export const OEM_CATALOG_MAX_PRODUCTS = 2000;

/**
 * The shipped snapshot and the payload served at `OEM_CATALOG_URL` share this shape, so the
 * snapshot file itself is a valid refresh payload.
 */
export const ZOemCatalog = z
  .object({
    version: z.string().min(1).max(100).optional(),
    products: z.array(ZOemProduct).min(1, { error: "the catalogue lists no products" }).max(OEM_CATALOG_MAX_PRODUCTS),
  })
  .superRefine((catalog, ctx) => {
    const seen = new Set<string>();
    catalog.products.forEach((product, index) => {
      if (seen.has(product.slug)) {
        ctx.addIssue({
          code: "custom",
          path: ["products", index, "slug"],
          message: `duplicate slug "${product.slug}"`,
        });
      }
      seen.add(product.slug);
    });
  })
  .meta({ id: "OemCatalog" });
export type TOemCatalog = z.infer<typeof ZOemCatalog>;

/** Input of `routers.oem`: the path parameter. Any string: a malformed id answers 404 like an unknown one. */
export const ZRouterOemInput = z.object({
  router_id: textRule(z.string({ error: "must be a string" })),
});
export type TRouterOemInput = z.infer<typeof ZRouterOemInput>;

/** `GET /api/routers/{router_id}/oem` answer (JSend envelope, docs/api.md "Routers"). */
export const ZOemInfoResponse = successEnvelope(ZOemInfo).meta({ id: "OemInfoResponse" });
export type TOemInfoResponse = z.infer<typeof ZOemInfoResponse>;
