import { Migration } from "@mikro-orm/migrations";
import { loadOemSnapshot, oemMatchKeys, snapshotSource } from "../oem/oem-snapshot.ts";

const literal = (value: string): string => `'${value.replaceAll("'", "''")}'`;

/**
 * The OEM catalogue, seeded with the shipped snapshot so every database (including each test's)
 * has manufacturer data without a refresh. Values are inlined as standard SQL literals because
 * `addSql` takes no parameters; the snapshot is our own validated data.
 */
export class OemMigration extends Migration {
  override up(): void {
    this.addSql(
      `create table "oem_products" ("slug" varchar(100) not null, "match_keys" text[] not null, "document" jsonb not null, "source" varchar(500) not null, "updated_at" timestamptz not null, primary key ("slug"));`,
    );
    const catalog = loadOemSnapshot();
    const source = literal(snapshotSource(catalog));
    const rows = catalog.products.map((product) => {
      const keys = oemMatchKeys(product).map(literal).join(", ");
      return `(${literal(product.slug)}, array[${keys}]::text[], ${literal(JSON.stringify(product))}::jsonb, ${source}, now())`;
    });
    this.addSql(
      `insert into "oem_products" ("slug", "match_keys", "document", "source", "updated_at") values ${rows.join(", ")};`,
    );
  }
}
