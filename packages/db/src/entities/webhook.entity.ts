import { defineEntity, type InferEntity, p } from "@mikro-orm/core";
import { Organization } from "./organization.entity.ts";
import { Team } from "./team.entity.ts";

/**
 * An outbound webhook of an organization (docs/api.md "Audit log and webhooks"). The signing secret
 * is needed in clear to compute each HMAC, so it cannot be hashed: it is stored encrypted
 * (AES-256-GCM, `secretCiphertext`), and shown to its creator once. `failingSince` is the first
 * failure of the current run of failures; three days of them disable the webhook (`disabledAt`).
 */
export const Webhook = defineEntity({
  name: "Webhook",
  tableName: "webhooks",
  indexes: [{ name: "webhooks_organization_id_created_at_index", properties: ["organization", "createdAt"] }],
  properties: {
    id: p.uuid().primary(),
    organization: () => p.manyToOne(Organization).deleteRule("cascade"),
    /** Set when a team-bound credential made it: it receives only that team's events. */
    team: () => p.manyToOne(Team).deleteRule("cascade").nullable().index(),
    url: p.string().length(2048),
    /** Actions subscribed to, or ["*"]. */
    events: p.json<string[]>(),
    description: p.string().length(500),
    format: p.enum(["standard", "slack"] as const).default("standard"),
    secretCiphertext: p.text(),
    createdAt: p.datetime(),
    failingSince: p.datetime().nullable(),
    disabledAt: p.datetime().nullable(),
  },
});
export type TWebhook = InferEntity<typeof Webhook>;
