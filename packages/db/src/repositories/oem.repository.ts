import { oemLookupKeys, type TOemCatalog, type TOemProduct, isUuid } from "@fleet/shared";
import { sql } from "kysely";
import type { Query } from "../database.ts";
import { oemMatchKeys, SNAPSHOT_SOURCE_PREFIX, snapshotSource } from "../oem/oem-snapshot.ts";
import { textArray } from "./pg-arrays.ts";
import { toNumber } from "./sql-values.ts";

/** Rows per insert statement when the catalogue is replaced (5 parameters each). */
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
    const row = await this.#query.kysely
      .selectFrom("oem_products")
      .select("document")
      .where((eb) => eb.or(keys.map((key) => eb(eb.val(key), "=", eb.fn.any("match_keys")))))
      // Raw: a rank per key over an array column, and a flag read out of the jsonb document.
      .orderBy(
        sql`case ${sql.join(
          keys.map((key, i) => sql`when ${key} = any(match_keys) then ${sql.lit(i)}`),
          sql` `,
        )} end`,
      )
      .orderBy(sql`coalesce((document->>'archived')::boolean, false)`)
      .orderBy("slug")
      .limit(1)
      .executeTakeFirst();
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
    // One multi-row insert per chunk, its arrays written as literals both drivers read alike.
    for (let start = 0; start < products.length; start += INSERT_CHUNK) {
      const chunk = products.slice(start, start + INSERT_CHUNK);
      await query.kysely
        .insertInto("oem_products")
        .values(
          chunk.map((product) => ({
            slug: product.slug,
            match_keys: sql<string[]>`${textArray(oemMatchKeys(product))}::text[]`,
            document: sql<TOemProduct>`${JSON.stringify(product)}::jsonb`,
            source,
            updated_at: now,
          })),
        )
        .execute();
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
