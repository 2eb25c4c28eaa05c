import { type Database, queryOf } from "../database.ts";
import { AccountsRepository } from "../repositories/accounts.repository.ts";
import { WebhooksRepository } from "../repositories/webhooks.repository.ts";
import { IdentityWorkflow } from "../identity/identity-workflow.ts";
import { createHash } from "node:crypto";

let sequence = 0;
/** A value no other test in this process has used. */
export const unique = (prefix: string): string =>
  `${prefix}-${process.pid}-${++sequence}-${crypto.randomUUID().slice(0, 6)}`;

export const uniqueEmail = (prefix = "user"): string => `${unique(prefix)}@example.com`.toLowerCase();

/** A user with a default organization and team, as the login workflow makes them. */
export const makeUser = async (db: Database, overrides: { email?: string } = {}) =>
  new IdentityWorkflow(db).loginByEmail(overrides.email ?? uniqueEmail());

/** An organization under `parentId` (reseller trees). */
export const makeChildOrganization = async (db: Database, parentId: string, name = unique("child-org")) =>
  new IdentityWorkflow(db).createOrganization(name, parentId);

/** A billing account row without going through the processor (for tests of other features). */
export const makeAccount = async (
  db: Database,
  organizationId: string,
  overrides: Partial<{ name: string; email: string; country: string; stripeCustomerId: string }> = {},
) =>
  new AccountsRepository(db).insert({
    organizationId,
    name: overrides.name ?? "Test Org",
    email: overrides.email ?? uniqueEmail("billing"),
    country: overrides.country ?? "US",
    stripeCustomerId: overrides.stripeCustomerId ?? unique("cus_test"),
    balanceMinor: 0,
  });

/** An enabled webhook of the organization for every event: from then on its audit entries wait in the outbox. */
export const makeWebhook = async (db: Database, organizationId: string) =>
  new WebhooksRepository(queryOf(db)).insert({
    organizationId,
    teamId: null,
    url: "https://hooks.example.com/x",
    events: ["*"],
    description: "",
    format: "standard",
    secretCiphertext: "x",
    createdAt: new Date(),
  });

let tunnelSequence = 0;
const TUNNEL_START = Math.floor(Math.random() * 2 ** 21);
/**
 * A tunnel address no other router made by this process holds (routers.tunnel_ip is unique):
 * 100.64.0.0/10, the default TUNNEL_NETWORK, walked from a random start.
 */
export const uniqueTunnelIp = (): string => {
  tunnelSequence++;
  const offset = (TUNNEL_START + tunnelSequence) % (2 ** 22 - 2);
  const n = 0x64400000 + 1 + offset;
  return [24, 16, 8, 0].map((shift) => (n >>> shift) & 255).join(".");
};

/**
 * A router row in a team, as enrollment plus a first heartbeat would leave it: with its own
 * assigned tunnel address unless the test names one (or null for a router without one).
 */
export const makeRouter = async (
  db: Database,
  owner: { organizationId: string; teamId: string },
  overrides: Partial<{
    name: string;
    tunnelIp: string | null;
    hasPulse: boolean;
    model: string;
    boardName: string;
    identity: string;
    serialNumber: string;
    heartbeatToken: string;
    lastSeenAt: Date | null;
    lastSeenFrom: string | null;
  }> = {},
): Promise<{ id: string; heartbeatToken: string }> => {
  const id = crypto.randomUUID();
  const heartbeatToken = overrides.heartbeatToken ?? `hb_${crypto.randomUUID().replaceAll("-", "")}`;
  await db.query(
    `with r as (
       insert into routers (id, organization_id, team_id, name, identity, model, board_name, tunnel_ip, heartbeat_token_hash, created_at, serial_number)
       values ($1, $2, $3, $4, $5, $6, $7, $9, $10, now(), $11) returning id
     )
     insert into router_liveness (router_id, has_pulse, last_seen_at, last_seen_from)
     select id, $8, to_timestamp($12::float8 / 1000.0), $13 from r`,
    [
      id,
      owner.organizationId,
      owner.teamId,
      overrides.name ?? unique("router").slice(0, 100),
      overrides.identity ?? "",
      overrides.model ?? "",
      overrides.boardName ?? "",
      overrides.hasPulse ?? true,
      overrides.tunnelIp === undefined ? uniqueTunnelIp() : overrides.tunnelIp,
      createHash("sha256").update(heartbeatToken).digest("hex"),
      overrides.serialNumber ?? "",
      overrides.lastSeenAt?.getTime() ?? null,
      overrides.lastSeenFrom ?? null,
    ],
  );
  return { id, heartbeatToken };
};
