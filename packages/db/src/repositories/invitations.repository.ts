import { isUuid, type TRole } from "@fleet/shared";
import type { Query, Row } from "../database.ts";
import { toNumber } from "./sql-values.ts";

export interface InvitationRecord {
  id: string;
  organizationId: string;
  email: string;
  role: TRole;
  teamId: string | null;
  invitedBy: string;
  createdAt: Date;
  expiresAt: Date;
  acceptedAt: Date | null;
  revokedAt: Date | null;
}

export interface NewInvitation {
  id: string;
  organizationId: string;
  email: string;
  role: TRole;
  teamId: string | null;
  /** SHA-256 hex of the token: the token itself is never stored. */
  tokenHash: string;
  invitedBy: string;
  createdAt: Date;
  expiresAt: Date;
}

const COLUMNS = [
  "id",
  "organization_id",
  "email",
  "role",
  "team_id",
  "invited_by",
  "created_at",
  "expires_at",
  "accepted_at",
  "revoked_at",
] as const;

const fromRow = (row: Pick<Row<"invitations">, (typeof COLUMNS)[number]>): InvitationRecord => ({
  id: row.id,
  organizationId: row.organization_id,
  email: row.email,
  role: row.role,
  teamId: row.team_id,
  invitedBy: row.invited_by,
  createdAt: row.created_at,
  expiresAt: row.expires_at,
  acceptedAt: row.accepted_at,
  revokedAt: row.revoked_at,
});

/** Neither accepted nor revoked, and not expired at `now`. */
const pending = (query: Query, organizationId: string, now: Date) =>
  query.kysely
    .selectFrom("invitations")
    .where("organization_id", "=", organizationId)
    .where("accepted_at", "is", null)
    .where("revoked_at", "is", null)
    .where("expires_at", ">", now);

/** `invitations`: reads and writes only, on the `query` it is given. */
export class InvitationsRepository {
  readonly #query: Query;
  constructor(query: Query) {
    this.#query = query;
  }

  async insert(input: NewInvitation): Promise<InvitationRecord> {
    const row = await this.#query.kysely
      .insertInto("invitations")
      .values({
        id: input.id,
        organization_id: input.organizationId,
        email: input.email,
        role: input.role,
        team_id: input.teamId,
        token_hash: input.tokenHash,
        invited_by: input.invitedBy,
        created_at: input.createdAt,
        expires_at: input.expiresAt,
      })
      .returning(COLUMNS)
      .executeTakeFirstOrThrow();
    return fromRow(row);
  }

  /** Pending: neither accepted nor revoked, and not expired at `now`. */
  async countPending(organizationId: string, now: Date): Promise<number> {
    const row = await pending(this.#query, organizationId, now)
      .select((eb) => eb.fn.countAll().as("n"))
      .executeTakeFirstOrThrow();
    return toNumber(row.n);
  }

  async listPending(organizationId: string, now: Date): Promise<InvitationRecord[]> {
    const rows = await pending(this.#query, organizationId, now)
      .select(COLUMNS)
      .orderBy("created_at", "desc")
      .orderBy("id")
      .execute();
    return rows.map(fromRow);
  }

  async find(organizationId: string, id: string): Promise<InvitationRecord | null> {
    if (!isUuid(id)) return null;
    const row = await this.#query.kysely
      .selectFrom("invitations")
      .select(COLUMNS)
      .where("organization_id", "=", organizationId)
      .where("id", "=", id)
      .executeTakeFirst();
    return row ? fromRow(row) : null;
  }

  /** The invitation a token's hash names, its row locked until the transaction ends. */
  async findByHashForUpdate(tokenHash: string): Promise<InvitationRecord | null> {
    const row = await this.#query.kysely
      .selectFrom("invitations")
      .select(COLUMNS)
      .where("token_hash", "=", tokenHash)
      .forUpdate()
      .executeTakeFirst();
    return row ? fromRow(row) : null;
  }

  async revoke(id: string, at: Date): Promise<void> {
    await this.#query.kysely.updateTable("invitations").set({ revoked_at: at }).where("id", "=", id).execute();
  }

  async accept(id: string, userId: string, at: Date): Promise<void> {
    await this.#query.kysely
      .updateTable("invitations")
      .set({ accepted_at: at, accepted_by: userId })
      .where("id", "=", id)
      .execute();
  }
}
