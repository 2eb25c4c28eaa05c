import { defineEntity, type InferEntity, p } from "@mikro-orm/core";
import { Organization } from "./organization.entity.ts";

/**
 * An identity provider's name for an organization (the token's `id` claim) when it is not one of
 * our UUIDs. Lets tokens from any issuer we trust map to exactly one organization.
 */
export const OrganizationExternalId = defineEntity({
  name: "OrganizationExternalId",
  tableName: "organization_external_ids",
  properties: {
    externalId: p.string().length(255).primary(),
    organization: () => p.manyToOne(Organization).deleteRule("cascade").index(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type TOrganizationExternalId = InferEntity<typeof OrganizationExternalId>;
