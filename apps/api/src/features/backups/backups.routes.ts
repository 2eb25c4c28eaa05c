import { router } from "../../trpc/init.ts";
import { diffBackup } from "./diff-backup.ts";
import { getBackup } from "./get-backup.ts";
import { listBackups } from "./list-backups.ts";
import { takeBackup } from "./take-backup.ts";

export const backupsRouter = router({ take: takeBackup, list: listBackups, get: getBackup, diff: diffBackup });
