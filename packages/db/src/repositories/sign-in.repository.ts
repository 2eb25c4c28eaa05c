import { isUuid } from "@fleet/shared";
import type { Query } from "../database.ts";
import { toNumber } from "./sql-values.ts";

/** A sign-in under way (docs/api.md "Sign-in"). */
export interface OidcLoginRecord {
  browserHash: string;
  codeVerifier: string;
  nonce: string;
  returnTo: string;
  expiresAt: Date;
}

/** A sign-in session as stored: never the cookie's value itself. */
export interface AuthSessionRecord {
  id: string;
  userId: string;
  timezone: string | null;
  createdAt: Date;
  expiresAt: Date;
  endedAt: Date | null;
}

type Row = Record<string, unknown>;

const ms = (column: string, alias: string) => `(extract(epoch from ${column}) * 1000)::float8 as ${alias}`;
const SESSION_COLUMNS = `s.id, s.user_id, s.timezone, ${ms("s.created_at", "created_ms")}, ${ms("s.expires_at", "expires_ms")}, ${ms("s.ended_at", "ended_ms")}`;

const sessionFromRow = (row: Row): AuthSessionRecord => ({
  id: String(row.id),
  userId: String(row.user_id),
  timezone: row.timezone === null || row.timezone === undefined ? null : String(row.timezone),
  createdAt: new Date(toNumber(row.created_ms)),
  expiresAt: new Date(toNumber(row.expires_ms)),
  endedAt: row.ended_ms === null || row.ended_ms === undefined ? null : new Date(toNumber(row.ended_ms)),
});

/**
 * Sign-in through an OpenID Connect provider (docs/api.md "Sign-in"): `user_identities`,
 * `auth_sessions` and `oidc_logins`, reads and writes only, on the `query` it is given.
 */
export class SignInRepository {
  readonly #query: Query;
  constructor(query: Query) {
    this.#query = query;
  }

  async insertLogin(stateHash: string, login: OidcLoginRecord): Promise<void> {
    await this.#query(
      `insert into oidc_logins (state_hash, browser_hash, code_verifier, nonce, return_to, expires_at)
       values ($1, $2, $3, $4, $5, to_timestamp($6::float8 / 1000.0))`,
      [stateHash, login.browserHash, login.codeVerifier, login.nonce, login.returnTo, login.expiresAt.getTime()],
    );
  }

  /** The login of this state, deleted in the same statement: a state is taken at most once. */
  async takeLogin(stateHash: string): Promise<OidcLoginRecord | null> {
    const rows = await this.#query<Row>(
      `delete from oidc_logins where state_hash = $1
       returning browser_hash, code_verifier, nonce, return_to, ${ms("expires_at", "expires_ms")}`,
      [stateHash],
    );
    const row = rows[0];
    if (!row) return null;
    return {
      browserHash: String(row.browser_hash),
      codeVerifier: String(row.code_verifier),
      nonce: String(row.nonce),
      returnTo: String(row.return_to),
      expiresAt: new Date(toNumber(row.expires_ms)),
    };
  }

  /** Logins abandoned at the provider. */
  async deleteExpiredLogins(at: Date): Promise<void> {
    await this.#query(`delete from oidc_logins where expires_at <= to_timestamp($1::float8 / 1000.0)`, [at.getTime()]);
  }

  async findIdentityUser(issuer: string, subject: string): Promise<string | null> {
    const rows = await this.#query<{ user_id: string }>(
      `select user_id from user_identities where issuer = $1 and subject = $2`,
      [issuer, subject],
    );
    return rows[0]?.user_id ?? null;
  }

  /** Links the provider's person to a user; a concurrent first sign-in of the same person wins. */
  async linkIdentity(issuer: string, subject: string, userId: string, email: string, at: Date): Promise<void> {
    await this.#query(
      `insert into user_identities (id, issuer, subject, user_id, email, created_at)
       values (gen_random_uuid(), $1, $2, $3, $4, to_timestamp($5::float8 / 1000.0))
       on conflict (issuer, subject) do update set email = excluded.email`,
      [issuer, subject, userId, email, at.getTime()],
    );
  }

  async insertSession(session: AuthSessionRecord, tokenHash: string): Promise<void> {
    await this.#query(
      `insert into auth_sessions (id, token_hash, user_id, timezone, created_at, expires_at)
       values ($1, $2, $3, $4, to_timestamp($5::float8 / 1000.0), to_timestamp($6::float8 / 1000.0))`,
      [
        session.id,
        tokenHash,
        session.userId,
        session.timezone,
        session.createdAt.getTime(),
        session.expiresAt.getTime(),
      ],
    );
  }

  /** The session of a cookie, with its user's current organization (one statement: the token endpoint's path). */
  async findSessionByTokenHash(
    tokenHash: string,
  ): Promise<(AuthSessionRecord & { currentOrganizationId: string | null }) | null> {
    const rows = await this.#query<Row>(
      `select ${SESSION_COLUMNS}, u.current_organization_id
       from auth_sessions s join users u on u.id = s.user_id where s.token_hash = $1`,
      [tokenHash],
    );
    const row = rows[0];
    if (!row) return null;
    const current = row.current_organization_id;
    return {
      ...sessionFromRow(row),
      currentOrganizationId: current === null || current === undefined ? null : String(current),
    };
  }

  async findSession(id: string): Promise<AuthSessionRecord | null> {
    if (!isUuid(id)) return null;
    const rows = await this.#query<Row>(`select ${SESSION_COLUMNS} from auth_sessions s where s.id = $1`, [id]);
    return rows[0] ? sessionFromRow(rows[0]) : null;
  }

  /** Ends a session (logout); an ended one keeps its first end. */
  async endSession(id: string, at: Date): Promise<void> {
    await this.#query(
      `update auth_sessions set ended_at = to_timestamp($2::float8 / 1000.0) where id = $1 and ended_at is null`,
      [id, at.getTime()],
    );
  }

  /** Sessions long over: nothing can use them any more. */
  async deleteSessionsExpiredBefore(at: Date): Promise<void> {
    await this.#query(`delete from auth_sessions where expires_at <= to_timestamp($1::float8 / 1000.0)`, [
      at.getTime(),
    ]);
  }
}
