import { normalizeOemKey, type TOemCatalog, type TOemProduct, ZOemCatalog } from "@fleet/shared";
import raw from "./oem-snapshot.json" with { type: "json" };

/**
 * The manufacturer catalogue shipped with the code (`oem-snapshot.json`, data only). It seeds
 * `oem_products` so OEM data exists from the first start; a configured refresh replaces it later.
 */
export const loadOemSnapshot = (): TOemCatalog => ZOemCatalog.parse(raw);

/** `source` of rows that came from the shipped snapshot. */
export const snapshotSource = (catalog: TOemCatalog): string => `snapshot:${catalog.version ?? "unversioned"}`;

export const SNAPSHOT_SOURCE_PREFIX = "snapshot:";

/** The normalized keys a product is found by: its model code plus every reported name. */
export const oemMatchKeys = (product: TOemProduct): string[] => {
  const keys: string[] = [];
  for (const name of [product.model, ...product.match_keys]) {
    const key = normalizeOemKey(name);
    if (key && !keys.includes(key)) keys.push(key);
  }
  return keys;
};
