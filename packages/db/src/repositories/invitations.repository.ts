import { isRole, isUuid, type TRole } from "@fleet/shared";
import type { Query } from "../database.ts";
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

const ms = (column: string, alias: string) => `(extract(epoch from ${column}) * 1000)::float8 as ${alias}`;
const COLUMNS = `id, organization_id, email, role, team_id, invited_by, ${ms("created_at", "created_ms")},
  ${ms("expires_at", "expires_ms")}, ${ms("accepted_at", "accepted_ms")}, ${ms("revoked_at", "revoked_ms")}`;

const dateOrNull = (value: unknown): Date | null =>
  value === null || value === undefined ? null : new Date(toNumber(value));

const fromRow = (row: Record<string, unknown>): InvitationRecord => {
  const role = String(row.role);
  return {
    id: String(row.id),
    organizationId: String(row.organization_id),
    email: String(row.email),
    role: isRole(role) ? role : "viewer",
    teamId: row.team_id === null || row.team_id === undefined ? null : String(row.team_id),
    invitedBy: String(row.invited_by),
    createdAt: new Date(toNumber(row.created_ms)),
    expiresAt: new Date(toNumber(row.expires_ms)),
    acceptedAt: dateOrNull(row.accepted_ms),
    revokedAt: dateOrNull(row.revoked_ms),
  };
};

/** `invitations`: reads and writes only, on the `query` it is given. */
export class InvitationsRepository {
  readonly #query: Query;
  constructor(query: Query) {
    this.#query = query;
  }

  async insert(input: NewInvitation): Promise<InvitationRecord> {
    const rows = await this.#query<Record<string, unknown>>(
      `insert into invitations (id, organization_id, email, role, team_id, token_hash, invited_by, created_at, expires_at)
       values ($1, $2, $3, $4, $5, $6, $7, $8, $9) returning ${COLUMNS}`,
      [
        input.id,
        input.organizationId,
        input.email,
        input.role,
        input.teamId,
        input.tokenHash,
        input.invitedBy,
        input.createdAt,
        input.expiresAt,
      ],
    );
    const row = rows[0];
    if (!row) throw new Error("insert returned no row");
    return fromRow(row);
  }

  /** Pending: neither accepted nor revoked, and not expired at `now`. */
  async countPending(organizationId: string, now: Date): Promise<number> {
    const rows = await this.#query<{ n: unknown }>(
      `select count(*) as n from invitations
       where organization_id = $1 and accepted_at is null and revoked_at is null and expires_at > $2`,
      [organizationId, now],
    );
    return toNumber(rows[0]?.n ?? 0);
  }

  async listPending(organizationId: string, now: Date): Promise<InvitationRecord[]> {
    const rows = await this.#query<Record<string, unknown>>(
      `select ${COLUMNS} from invitations
       where organization_id = $1 and accepted_at is null and revoked_at is null and expires_at > $2
       order by created_at desc, id`,
      [organizationId, now],
    );
    return rows.map(fromRow);
  }

  async find(organizationId: string, id: string): Promise<InvitationRecord | null> {
    if (!isUuid(id)) return null;
    const rows = await this.#query<Record<string, unknown>>(
      `select ${COLUMNS} from invitations where organization_id = $1 and id = $2`,
      [organizationId, id],
    );
    return rows[0] ? fromRow(rows[0]) : null;
  }

  /** The invitation a token's hash names, its row locked until the transaction ends. */
  async findByHashForUpdate(tokenHash: string): Promise<InvitationRecord | null> {
    const rows = await this.#query<Record<string, unknown>>(
      `select ${COLUMNS} from invitations where token_hash = $1 for update`,
      [tokenHash],
    );
    return rows[0] ? fromRow(rows[0]) : null;
  }

  async revoke(id: string, at: Date): Promise<void> {
    await this.#query(`update invitations set revoked_at = $2 where id = $1`, [id, at]);
  }

  async accept(id: string, userId: string, at: Date): Promise<void> {
    await this.#query(`update invitations set accepted_at = $2, accepted_by = $3 where id = $1`, [id, at, userId]);
  }
}
