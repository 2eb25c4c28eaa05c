import { Migration } from "@mikro-orm/migrations";

/**
 * Sign-in through an OpenID Connect provider (docs/api.md "Sign-in"): people known by the
 * provider's issuer and subject, sign-in sessions (only the hash of the cookie's value), and the
 * logins under way (state, nonce and PKCE verifier between the redirect to the provider and its
 * callback; a row is taken once, so a state or a code cannot be replayed).
 */
export class SignInMigration extends Migration {
  override up(): void {
    this.addSql(
      `create table "user_identities" ("id" uuid not null, "issuer" varchar(500) not null, "subject" varchar(255) not null, "user_id" uuid not null, "email" varchar(250) not null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `alter table "user_identities" add constraint "user_identities_issuer_subject_unique" unique ("issuer", "subject");`,
    );
    this.addSql(`create index "user_identities_user_id_index" on "user_identities" ("user_id");`);
    this.addSql(
      `alter table "user_identities" add constraint "user_identities_user_id_foreign" foreign key ("user_id") references "users" ("id") on delete cascade;`,
    );
    this.addSql(
      `create table "auth_sessions" ("id" uuid not null, "token_hash" varchar(64) not null, "user_id" uuid not null, "timezone" varchar(64) null, "created_at" timestamptz not null, "expires_at" timestamptz not null, "ended_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`alter table "auth_sessions" add constraint "auth_sessions_token_hash_unique" unique ("token_hash");`);
    this.addSql(`create index "auth_sessions_user_id_index" on "auth_sessions" ("user_id");`);
    this.addSql(
      `alter table "auth_sessions" add constraint "auth_sessions_user_id_foreign" foreign key ("user_id") references "users" ("id") on delete cascade;`,
    );
    this.addSql(
      `create table "oidc_logins" ("state_hash" varchar(64) not null, "browser_hash" varchar(64) not null, "code_verifier" varchar(128) not null, "nonce" varchar(128) not null, "return_to" varchar(2000) not null, "expires_at" timestamptz not null, primary key ("state_hash"));`,
    );
    this.addSql(`create index "oidc_logins_expires_at_index" on "oidc_logins" ("expires_at");`);
  }
}
