import { defineEntity, type InferEntity, p } from "@mikro-orm/core";

/**
 * An organization. `parent` builds the reseller hierarchy of docs/api.md "What the service does" 1:
 * the organization at the top of a tree is billed for everything below it.
 */
export const Organization = defineEntity({
  name: "Organization",
  tableName: "organizations",
  properties: {
    id: p.uuid().primary(),
    name: p.string().length(200),
    parent: () => p.manyToOne(Organization).nullable().index(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type TOrganization = InferEntity<typeof Organization>;
