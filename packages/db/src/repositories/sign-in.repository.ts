import { isUuid } from "@fleet/shared";
import type { Query } from "../database.ts";

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

const SESSION_COLUMNS = ["s.id", "s.user_id", "s.timezone", "s.created_at", "s.expires_at", "s.ended_at"] as const;

const selectSessions = (query: Query) => query.kysely.selectFrom("auth_sessions as s").select(SESSION_COLUMNS);

type SessionRow = Awaited<ReturnType<ReturnType<typeof selectSessions>["executeTakeFirstOrThrow"]>>;

const sessionFromRow = (row: SessionRow): AuthSessionRecord => ({
  id: row.id,
  userId: row.user_id,
  timezone: row.timezone,
  createdAt: row.created_at,
  expiresAt: row.expires_at,
  endedAt: row.ended_at,
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
    await this.#query.kysely
      .insertInto("oidc_logins")
      .values({
        state_hash: stateHash,
        browser_hash: login.browserHash,
        code_verifier: login.codeVerifier,
        nonce: login.nonce,
        return_to: login.returnTo,
        expires_at: login.expiresAt,
      })
      .execute();
  }

  /** The login of this state, deleted in the same statement: a state is taken at most once. */
  async takeLogin(stateHash: string): Promise<OidcLoginRecord | null> {
    const row = await this.#query.kysely
      .deleteFrom("oidc_logins")
      .where("state_hash", "=", stateHash)
      .returning(["browser_hash", "code_verifier", "nonce", "return_to", "expires_at"])
      .executeTakeFirst();
    if (!row) return null;
    return {
      browserHash: row.browser_hash,
      codeVerifier: row.code_verifier,
      nonce: row.nonce,
      returnTo: row.return_to,
      expiresAt: row.expires_at,
    };
  }

  /** Logins abandoned at the provider. */
  async deleteExpiredLogins(at: Date): Promise<void> {
    await this.#query.kysely.deleteFrom("oidc_logins").where("expires_at", "<=", at).execute();
  }

  async findIdentityUser(issuer: string, subject: string): Promise<string | null> {
    const row = await this.#query.kysely
      .selectFrom("user_identities")
      .select("user_id")
      .where("issuer", "=", issuer)
      .where("subject", "=", subject)
      .executeTakeFirst();
    return row?.user_id ?? null;
  }

  /** Links the provider's person to a user; a concurrent first sign-in of the same person wins. */
  async linkIdentity(issuer: string, subject: string, userId: string, email: string, at: Date): Promise<void> {
    await this.#query.kysely
      .insertInto("user_identities")
      .values({ id: crypto.randomUUID(), issuer, subject, user_id: userId, email, created_at: at })
      .onConflict((oc) => oc.columns(["issuer", "subject"]).doUpdateSet((eb) => ({ email: eb.ref("excluded.email") })))
      .execute();
  }

  async insertSession(session: AuthSessionRecord, tokenHash: string): Promise<void> {
    await this.#query.kysely
      .insertInto("auth_sessions")
      .values({
        id: session.id,
        token_hash: tokenHash,
        user_id: session.userId,
        timezone: session.timezone,
        created_at: session.createdAt,
        expires_at: session.expiresAt,
      })
      .execute();
  }

  /** The session of a cookie, with its user's current organization (one statement: the token endpoint's path). */
  async findSessionByTokenHash(
    tokenHash: string,
  ): Promise<(AuthSessionRecord & { currentOrganizationId: string | null }) | null> {
    const row = await selectSessions(this.#query)
      .innerJoin("users as u", "u.id", "s.user_id")
      .select("u.current_organization_id")
      .where("s.token_hash", "=", tokenHash)
      .executeTakeFirst();
    if (!row) return null;
    return { ...sessionFromRow(row), currentOrganizationId: row.current_organization_id };
  }

  async findSession(id: string): Promise<AuthSessionRecord | null> {
    if (!isUuid(id)) return null;
    const row = await selectSessions(this.#query).where("s.id", "=", id).executeTakeFirst();
    return row ? sessionFromRow(row) : null;
  }

  /** Ends a session (logout); an ended one keeps its first end. */
  async endSession(id: string, at: Date): Promise<void> {
    await this.#query.kysely
      .updateTable("auth_sessions")
      .set({ ended_at: at })
      .where("id", "=", id)
      .where("ended_at", "is", null)
      .execute();
  }

  /** Sessions long over: nothing can use them any more. */
  async deleteSessionsExpiredBefore(at: Date): Promise<void> {
    await this.#query.kysely.deleteFrom("auth_sessions").where("expires_at", "<=", at).execute();
  }
}
