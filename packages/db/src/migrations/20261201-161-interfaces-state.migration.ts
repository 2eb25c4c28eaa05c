import { Migration } from "@mikro-orm/migrations";

/**
 * The latest state of a router's interfaces as one row per router (docs/scale.md "Health
 * samples"): `interfaces` maps each name to `[reported_ms, running, rx_bytes, tx_bytes, rx_errors,
 * tx_errors, rx_bps, tx_bps]`. The daemon writes it once per sample period (or when an interface
 * starts or stops running): one row instead of one per interface. Replaces `router_interfaces_latest`.
 */
export class InterfacesStateMigration extends Migration {
  override up(): void {
    this.addSql(
      `create table "router_interfaces_state" ("router_id" uuid not null, "reported_at" timestamptz not null, "interfaces" jsonb not null, primary key ("router_id"));`,
    );
    this.addSql(
      `alter table "router_interfaces_state" add constraint "router_interfaces_state_router_id_foreign" foreign key ("router_id") references "routers" ("id") on update cascade on delete cascade;`,
    );
    this.addSql(
      `insert into "router_interfaces_state" (router_id, reported_at, interfaces)
       select router_id, max(reported_at), jsonb_object_agg(name, jsonb_build_array(
         (extract(epoch from reported_at) * 1000)::float8, running, rx_bytes, tx_bytes, rx_errors, tx_errors, rx_bps, tx_bps))
       from "router_interfaces_latest" group by router_id;`,
    );
    this.addSql(`drop table "router_interfaces_latest";`);
  }
}
