import { Migration } from "@mikro-orm/migrations";

/** Transient port forwards, the tunnel agent's durable job queue and pinned SSH host keys. */
export class ForwardsMigration extends Migration {
  override up(): void {
    this.addSql(
      `create table "forwards" ("id" uuid not null, "router_id" uuid not null, "entry_point" varchar(253) not null, "port" int not null, "dst_address" varchar(15) not null, "dst_port" int not null, "allow_only_cidr" varchar(18) not null, "status" text not null default 'active', "expires_at" timestamptz not null, "created_at" timestamptz not null, "closed_at" timestamptz null, "applied_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`create index "forwards_router_id_index" on "forwards" ("router_id");`);
    this.addSql(`create index "forwards_status_expires_at_index" on "forwards" ("status", "expires_at");`);
    // Port uniqueness among active forwards is the database's job: concurrent creates race here.
    this.addSql(
      `create unique index "forwards_active_port_unique" on "forwards" ("entry_point", "port") where status = 'active';`,
    );
    this.addSql(
      `alter table "forwards" add constraint "forwards_status_check" check ("status" in ('active', 'expired', 'revoked'));`,
    );
    this.addSql(
      `alter table "forwards" add constraint "forwards_router_id_foreign" foreign key ("router_id") references "routers" ("id") on delete cascade;`,
    );

    this.addSql(
      `create table "jobs" ("id" uuid not null, "kind" varchar(64) not null, "group_key" varchar(100) not null, "dedupe_key" varchar(200) null, "payload" jsonb not null, "status" text not null default 'pending', "attempts" int not null default 0, "max_attempts" int not null default 10, "run_at" timestamptz not null, "locked_by" varchar(100) null, "locked_until" timestamptz null, "last_error" text null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "finished_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`create index "jobs_status_run_at_index" on "jobs" ("status", "run_at");`);
    this.addSql(`create index "jobs_group_key_status_index" on "jobs" ("group_key", "status");`);
    this.addSql(
      `create unique index "jobs_dedupe_key_unique" on "jobs" ("dedupe_key") where status in ('pending', 'running');`,
    );
    this.addSql(
      `alter table "jobs" add constraint "jobs_status_check" check ("status" in ('pending', 'running', 'done', 'failed'));`,
    );

    this.addSql(
      `create table "ssh_host_keys" ("id" uuid not null, "host" varchar(45) not null, "port" int not null, "fingerprint" varchar(100) not null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`alter table "ssh_host_keys" add constraint "ssh_host_keys_host_port_unique" unique ("host", "port");`);
  }
}
