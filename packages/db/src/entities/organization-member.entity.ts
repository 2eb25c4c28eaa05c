import { defineEntity, type InferEntity, p } from "@mikro-orm/core";
import { Organization } from "./organization.entity.ts";
import { User } from "./user.entity.ts";

export const OrganizationMember = defineEntity({
  name: "OrganizationMember",
  tableName: "organization_members",
  uniques: [{ properties: ["organization", "user"] }],
  properties: {
    id: p.uuid().primary(),
    organization: () => p.manyToOne(Organization).deleteRule("cascade"),
    user: () => p.manyToOne(User).deleteRule("cascade"),
    role: p.enum(["owner", "admin", "member"] as const),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type TOrganizationMember = InferEntity<typeof OrganizationMember>;
