import { defineEntity, type InferEntity, p } from "@mikro-orm/core";
import { Organization } from "./organization.entity.ts";

/** Router endpoints act on a team (docs/api.md Authentication 4); every organization has a default one. */
export const Team = defineEntity({
  name: "Team",
  tableName: "teams",
  properties: {
    id: p.uuid().primary(),
    organization: () => p.manyToOne(Organization).deleteRule("cascade").index(),
    name: p.string().length(200),
    isDefault: p.boolean().default(false),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type TTeam = InferEntity<typeof Team>;
