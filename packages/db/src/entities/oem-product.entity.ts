import { defineEntity, type InferEntity, p } from "@mikro-orm/core";
import type { TOemProduct } from "@fleet/shared";

/**
 * One model of the manufacturer's catalogue (docs/api.md "OEM Information"). The whole entry is kept as
 * one document, as the vendor publishes it; `matchKeys` are its normalized model and board names
 * (`normalizeOemKey`), the only part queries look at.
 */
export const OemProduct = defineEntity({
  name: "OemProduct",
  tableName: "oem_products",
  properties: {
    slug: p.string().length(100).primary(),
    matchKeys: p.array(),
    document: p.json<TOemProduct>(),
    /** Where the data came from: `snapshot:<version>` or the refresh URL without its query. */
    source: p.string().length(500),
    updatedAt: p.datetime(),
  },
});
export type TOemProductEntity = InferEntity<typeof OemProduct>;
