import { Migration } from "@mikro-orm/migrations";

/**
 * The trigger that keeps `router_liveness.heartbeat_token_hash` equal to the router's token. The
 * Router entity declares it from these same strings (its `triggers`), so the schema comparison sees
 * what this migration created; the condition is written as PostgreSQL prints it back. `update` with
 * a condition rather than `update of <column>`, which an entity cannot declare: a write of the
 * reported facts only evaluates the condition.
 */
export const TOKEN_TO_LIVENESS_TRIGGER = {
  name: "token_to_liveness",
  when: "((old.heartbeat_token_hash)::text IS DISTINCT FROM (new.heartbeat_token_hash)::text)",
  body: "update router_liveness set heartbeat_token_hash = new.heartbeat_token_hash where router_id = new.id; return null;",
} as const;

/**
 * The steady flush no longer reads `routers` (docs/architecture.md "Liveness: what a heartbeat
 * writes"). `router_liveness` keeps a copy of the router's `heartbeat_token_hash` and `facts_digest`,
 * a digest (computed by the daemon) of the reported facts the row's last full write applied to
 * `routers`. A heartbeat whose token and digest match updates the liveness row alone; anything else
 * takes the full upsert, which checks the token against `routers` and writes both columns.
 *
 * The copy of the token must never lag behind `routers`: a heartbeat made with a replaced token
 * must not write (docs/routeros.md "Adoption"). A trigger keeps it in step, in the transaction that
 * changes the token, whatever changes it (the re-adoption, or any future statement or hand-run
 * fix): a copy left to each writer would let the old token write again the day one writer forgets it.
 *
 * Existing rows get their router's token; their digest starts empty, so each router's first
 * heartbeat after the migration takes the full upsert once and records it. No index covers either
 * column: the flush's update stays heap-only (HOT).
 */
export class LivenessTokenMigration extends Migration {
  override up(): void {
    const { name, when, body } = TOKEN_TO_LIVENESS_TRIGGER;
    this.addSql(
      `alter table "router_liveness" add column "heartbeat_token_hash" varchar(64) null, add column "facts_digest" bigint null;`,
    );
    this.addSql(
      `update "router_liveness" l set "heartbeat_token_hash" = r."heartbeat_token_hash" from "routers" r where r."id" = l."router_id";`,
    );
    // Named as MikroORM names a trigger's function (<table>_<trigger>_fn), with its begin/end wrapper.
    this.addSql(`create function "routers_${name}_fn"() returns trigger as $$ begin ${body} end; $$ language plpgsql;`);
    this.addSql(
      `create trigger "${name}" after update on "routers" for each row when (${when}) execute function "routers_${name}_fn"();`,
    );
  }
}
