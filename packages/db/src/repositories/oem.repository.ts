import { oemLookupKeys, type TOemCatalog, type TOemProduct, isUuid } from "@fleet/shared";
import type { Query } from "../database.ts";
import { oemMatchKeys, SNAPSHOT_SOURCE_PREFIX, snapshotSource } from "../oem/oem-snapshot.ts";
import { textArray } from "./pg-arrays.ts";
import { toNumber } from "./sql-values.ts";

/** Rows per insert statement when the catalogue is replaced (3 parameters each). */
const INSERT_CHUNK = 1_000;

/** The model facts of a router that OEM matching needs. */
export interface RouterModelRef {
  model: string;
  boardName: string;
}

/** Where the catalogue currently comes from. */
export interface OemCatalogStatus {
  count: number;
  /** `snapshot:<version>` or the refresh URL (without its query). Null when empty. */
  source: string | null;
  updatedAt: Date | null;
}

const parseDocument = (value: unknown): TOemProduct =>
  (typeof value === "string" ? JSON.parse(value) : value) as TOemProduct;

/** The manufacturer catalogue (`oem_products`): matching a router to a model, and replacing it. */
export class OemRepository {
  readonly #query: Query;
  /** On `queryOf(db)`, or on a transaction's `query` for the writes (their caller opens it). */
  constructor(query: Query) {
    this.#query = query;
  }

  /**
   * The entry for a router that reports `model` and `boardName` (either may be empty). The model
   * wins over the board name, which disambiguates shared model codes (Chateau 5G ax and Chateau
   * LTE18 ax report the same board model); see `oemLookupKeys` for normalization and CHR.
   */
  async findForRouter(
    model: string | null | undefined,
    boardName: string | null | undefined,
  ): Promise<TOemProduct | null> {
    return this.findByKeys(oemLookupKeys(model, boardName));
  }

  /** The best entry for already-normalized keys, best key first; current models beat archived. */
  async findByKeys(keys: readonly string[]): Promise<TOemProduct | null> {
    if (keys.length === 0) return null;
    // Raw: a rank per key over an array column, one statement text per number of keys.
    const rank = keys.map((_, i) => `when $${i + 1} = any(match_keys) then ${i}`).join(" ");
    const rows = await this.#query<{ document: unknown }>(
      `select document from oem_products
       where ${keys.map((_, i) => `$${i + 1} = any(match_keys)`).join(" or ")}
       order by case ${rank} end, coalesce((document->>'archived')::boolean, false), slug
       limit 1`,
      keys,
    );
    const row = rows[0];
    return row ? parseDocument(row.document) : null;
  }

  /** Model and board name of a router of `teamId`; null for an unknown id or another team's router. */
  async routerModel(teamId: string, routerId: string): Promise<RouterModelRef | null> {
    if (!isUuid(routerId)) return null;
    const row = await this.#query.kysely
      .selectFrom("routers")
      .select(["model", "board_name"])
      .where("id", "=", routerId)
      .where("team_id", "=", teamId)
      .executeTakeFirst();
    return row ? { model: row.model ?? "", boardName: row.board_name ?? "" } : null;
  }

  /**
   * Swaps the whole catalogue; run it in one transaction, so readers see the old one or the new one
   * and a failure leaves the old one in place. Returns the number of entries stored.
   */
  async replaceAll(catalog: TOemCatalog, source: string, now: Date): Promise<number> {
    const products = catalog.products;
    const query = this.#query;
    await query.kysely.deleteFrom("oem_products").execute();
    // Raw: one multi-row insert per chunk, its arrays written as literals both drivers read alike.
    for (let start = 0; start < products.length; start += INSERT_CHUNK) {
      const chunk = products.slice(start, start + INSERT_CHUNK);
      const params: unknown[] = [source, now];
      const values = chunk.map((product) => {
        params.push(product.slug, textArray(oemMatchKeys(product)), JSON.stringify(product));
        const n = params.length;
        return `($${n - 2}, $${n - 1}::text[], $${n}::jsonb, $1, $2)`;
      });
      await query(
        `insert into oem_products (slug, match_keys, document, source, updated_at) values ${values.join(", ")}`,
        params,
      );
    }
    return products.length;
  }

  /**
   * Installs the shipped snapshot when the table is empty or holds an older snapshot; data from a
   * refresh is never overwritten by the snapshot. Returns true when it wrote.
   */
  async installSnapshot(catalog: TOemCatalog, now: Date): Promise<boolean> {
    const source = snapshotSource(catalog);
    const rows = await this.#query.kysely.selectFrom("oem_products").select("source").distinct().execute();
    const sources = rows.map((r) => r.source);
    if (sources.length === 1 && sources[0] === source) return false;
    if (sources.some((s) => !s.startsWith(SNAPSHOT_SOURCE_PREFIX))) return false;
    await this.replaceAll(catalog, source, now);
    return true;
  }

  async status(): Promise<OemCatalogStatus> {
    const row = await this.#query.kysely
      .selectFrom("oem_products")
      .select((eb) => [
        eb.fn.countAll().as("n"),
        eb.fn.max("source").as("source"),
        eb.fn.max("updated_at").as("updated_at"),
      ])
      .executeTakeFirstOrThrow();
    const count = toNumber(row.n);
    return { count, source: count > 0 ? row.source : null, updatedAt: count > 0 ? row.updated_at : null };
  }
}
