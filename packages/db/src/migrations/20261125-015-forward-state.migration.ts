import { Migration } from "@mikro-orm/migrations";

/**
 * A forward's real state (docs/api.md "Transient Port Forward" `state`): a forward the tunnel agent
 * gave up on is `failed`, with the reason. A failed forward holds no port and counts against no
 * quota (both only count `active` rows).
 */
export class ForwardStateMigration extends Migration {
  override up(): void {
    this.addSql(`alter table "forwards" drop constraint if exists "forwards_status_check";`);
    this.addSql(
      `alter table "forwards" add constraint "forwards_status_check" check ("status" in ('active', 'expired', 'revoked', 'failed'));`,
    );
    this.addSql(`alter table "forwards" add column "failure_reason" varchar(500) null;`);
  }
}
