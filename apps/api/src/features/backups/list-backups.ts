import { ZBackupsPage, ZListBackupsInput } from "@fleet/shared";
import { teamProcedure } from "../../trpc/init.ts";
import { jsend } from "../../trpc/envelopes.ts";

export const listBackups = teamProcedure("routers:read")
  .meta({
    openapi: {
      method: "GET",
      path: "/api/routers/{router_id}/backups",
      tags: ["backups"],
      summary: "The router's configuration versions, newest first",
      description:
        "Pages of up to `limit` versions (1..200, default 50); pass `next_cursor` back as `cursor` for older ones. " +
        "`last_failure` tells when and why the last backup failed, until one succeeds.",
    },
    successStatus: 200,
  })
  .input(ZListBackupsInput)
  .output(ZBackupsPage)
  .query(jsend.page(({ ctx, input }) => ctx.services.backups.list(ctx.teamId, input)));
