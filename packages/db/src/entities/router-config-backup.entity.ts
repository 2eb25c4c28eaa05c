import { defineEntity, type InferEntity, p } from "@mikro-orm/core";
import { Router } from "./router.entity.ts";

/**
 * One version of a router's configuration (docs/api.md "Configuration backups"): the text of
 * `/export terse` as read; `sha256` is the hash of that text. A read equal to the newest version (by
 * `normalizedSha256`, which ignores the dated first line) stores nothing new; only `checkedAt`
 * moves. At most BACKUP_RETENTION per router.
 */
export const RouterConfigBackup = defineEntity({
  name: "RouterConfigBackup",
  tableName: "router_config_backups",
  indexes: [{ name: "router_config_backups_router_created_index", properties: ["router", "createdAt", "id"] }],
  properties: {
    id: p.uuid().primary(),
    router: () => p.manyToOne(Router).deleteRule("cascade"),
    createdAt: p.datetime(),
    checkedAt: p.datetime(),
    sha256: p.string().length(64),
    normalizedSha256: p.string().length(64).nullable(),
    bytes: p.integer(),
    lines: p.integer(),
    content: p.text(),
  },
});
export type TRouterConfigBackup = InferEntity<typeof RouterConfigBackup>;

/**
 * The backup schedule's bookkeeping per router: when its last backup job was queued (the schedule
 * queues a router again only after BACKUP_INTERVAL_HOURS) and the last failure since the last
 * success, shown beside the router's backup list.
 */
export const RouterBackupState = defineEntity({
  name: "RouterBackupState",
  tableName: "router_backup_states",
  properties: {
    router: () => p.oneToOne(Router).primary().owner().deleteRule("cascade").updateRule("no action"),
    queuedAt: p.datetime().nullable(),
    failedAt: p.datetime().nullable(),
    failureReason: p.string().length(500).nullable(),
  },
});
export type TRouterBackupState = InferEntity<typeof RouterBackupState>;
