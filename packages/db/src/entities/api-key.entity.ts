import { defineEntity, type InferEntity, p } from "@mikro-orm/core";
import { Organization } from "./organization.entity.ts";
import { Team } from "./team.entity.ts";

/**
 * An API key for scripts and integrations (docs/api.md "Authentication"). Only the SHA-256 of the
 * key is stored; `prefix` is its first characters, shown in lists so people can tell keys apart.
 * `createdBy` is the token subject that made it (identity-provider subjects need not be our UUIDs).
 * Revoking deletes the row: nothing is left that could authenticate.
 */
export const ApiKey = defineEntity({
  name: "ApiKey",
  tableName: "api_keys",
  indexes: [{ name: "api_keys_organization_id_created_at_index", properties: ["organization", "createdAt"] }],
  properties: {
    id: p.uuid().primary(),
    organization: () => p.manyToOne(Organization).deleteRule("cascade"),
    /** Set when the creating token named a team: the key reaches nothing outside it. */
    team: () => p.manyToOne(Team).deleteRule("cascade").nullable().index(),
    createdBy: p.string().length(255),
    name: p.string().length(100),
    prefix: p.string().length(16),
    keyHash: p.string().length(64).unique(),
    /** Space-separated, as in a token's `scope` claim. */
    scopes: p.string().length(200),
    createdAt: p.datetime(),
    expiresAt: p.datetime().nullable(),
    lastUsedAt: p.datetime().nullable(),
  },
});
export type TApiKey = InferEntity<typeof ApiKey>;
