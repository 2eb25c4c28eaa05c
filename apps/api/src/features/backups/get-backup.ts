import { ZGetBackupInput } from "@fleet/shared";
import { z } from "zod";
import { teamProcedure } from "../../trpc/init.ts";

export const getBackup = teamProcedure("routers:read")
  .meta({
    openapi: {
      method: "GET",
      path: "/api/routers/{router_id}/backups/{id}",
      tags: ["backups"],
      summary: "One configuration version as text (`text/plain`)",
    },
    successStatus: 200,
    rest: { text: "text/plain" },
  })
  .input(ZGetBackupInput)
  .output(z.string())
  .query(({ ctx, input }) => ctx.services.backups.get(ctx.teamId, input));
