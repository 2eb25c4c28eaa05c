import { ZAuditLogPage, ZAuditLogQuery } from "@fleet/shared";
import { authedProcedure } from "../../trpc/init.ts";
import { jsend } from "../../trpc/envelopes.ts";

export const listAuditLog = authedProcedure("routers:read")
  .meta({
    openapi: {
      method: "GET",
      path: "/api/audit-log",
      tags: ["audit log"],
      summary: "The organization's audit log, newest first",
      description:
        "Pages of up to `limit` entries (1..200, default 50); pass `next_cursor` back as `cursor` for older ones. Filters: `router_id`, `action`. A team-bound credential sees only its team's entries.",
    },
    successStatus: 200,
  })
  .input(ZAuditLogQuery)
  .output(ZAuditLogPage)
  .query(
    jsend.page(async ({ ctx, input }) =>
      ctx.services.auditLog.list(ctx.auth.organizationId, input ?? {}, await ctx.services.teams.bound(ctx.auth)),
    ),
  );
