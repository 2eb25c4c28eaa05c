import { defineEntity, type InferEntity, p } from "@mikro-orm/core";
import { Organization } from "./organization.entity.ts";

export const User = defineEntity({
  name: "User",
  tableName: "users",
  properties: {
    id: p.uuid().primary(),
    email: p.string().length(250).unique(),
    currentOrganization: () => p.manyToOne(Organization).nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type TUser = InferEntity<typeof User>;
