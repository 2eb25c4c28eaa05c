import { router } from "../../trpc/init.ts";
import { listAuditLog } from "./list-audit-log.ts";

export const auditLogRouter = router({ list: listAuditLog });
