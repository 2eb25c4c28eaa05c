import { defineEntity, type InferEntity, p } from "@mikro-orm/core";
import { Organization } from "./organization.entity.ts";
import { Router } from "./router.entity.ts";
import { Team } from "./team.entity.ts";

// docs/api.md "Changes" (migration 150). The tables of one feature in one file (as alerts.entity.ts).

/** A fleet change: what it does, to which routers, how it rolls out, and where it stands. */
export const Change = defineEntity({
  name: "Change",
  tableName: "changes",
  indexes: [{ name: "changes_organization_id_created_at_id_index", properties: ["organization", "createdAt", "id"] }],
  properties: {
    id: p.uuid().primary(),
    organization: () => p.manyToOne(Organization).deleteRule("cascade"),
    /** Set when a team-bound credential made it: only that team sees it and its routers are the team's. */
    team: () => p.manyToOne(Team).deleteRule("cascade").nullable().index(),
    name: p.string().length(100),
    kind: p.string().length(16),
    script: p.text().nullable(),
    firmwareChannel: p.string().length(16).nullable(),
    firmwareVersion: p.string().length(64).nullable(),
    /** `{router_ids?, tags?, team_id?}` as given. */
    selector: p.json<Record<string, unknown>>(),
    canary: p.integer(),
    waveSize: p.integer(),
    waveIntervalSeconds: p.integer(),
    maxFailures: p.integer(),
    guardSeconds: p.integer(),
    requiresApproval: p.boolean().default(false),
    startAt: p.datetime().nullable(),
    state: p.string().length(24),
    createdByType: p.string().length(16),
    createdBy: p.string().length(100).nullable(),
    approvedBy: p.string().length(100).nullable(),
    approvedAt: p.datetime().nullable(),
    startedAt: p.datetime().nullable(),
    finishedAt: p.datetime().nullable(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
});
export type TChange = InferEntity<typeof Change>;

/** One targeted router of a change: its wave (0: canary), its result, and the executor's step. */
export const ChangeRouter = defineEntity({
  name: "ChangeRouter",
  tableName: "change_routers",
  uniques: [{ name: "change_routers_change_id_router_id_unique", properties: ["change", "router"] }],
  indexes: [{ name: "change_routers_change_id_wave_position_index", properties: ["change", "wave", "position"] }],
  properties: {
    id: p.uuid().primary(),
    change: () => p.manyToOne(Change).deleteRule("cascade"),
    router: () => p.manyToOne(Router).deleteRule("cascade").index(),
    wave: p.integer(),
    position: p.integer(),
    state: p.string().length(24),
    /** The executor's resumable step (backup, guard, script, confirm, reboot); null before it starts. */
    phase: p.string().length(32).nullable(),
    /** The script rendered for this router when its wave was dispatched. */
    script: p.text().nullable(),
    output: p.text().nullable(),
    startedAt: p.datetime().nullable(),
    finishedAt: p.datetime().nullable(),
  },
});
export type TChangeRouter = InferEntity<typeof ChangeRouter>;
