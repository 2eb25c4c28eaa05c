import { defineEntity, type InferEntity, p } from "@mikro-orm/core";
import { User } from "./user.entity.ts";

/** A person as an OpenID Connect provider knows them: its `iss` and `sub` (docs/api.md "Sign-in"). */
export const UserIdentity = defineEntity({
  name: "UserIdentity",
  tableName: "user_identities",
  uniques: [{ properties: ["issuer", "subject"] }],
  properties: {
    id: p.uuid().primary(),
    issuer: p.string().length(500),
    subject: p.string().length(255),
    user: () => p.manyToOne(User).deleteRule("cascade").index(),
    /** The verified email the provider last gave. */
    email: p.string().length(250),
    createdAt: p.datetime(),
  },
});
export type TUserIdentity = InferEntity<typeof UserIdentity>;
