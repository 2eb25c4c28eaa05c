import { ZBackupJob, ZTakeBackupInput } from "@fleet/shared";
import { teamProcedure } from "../../trpc/init.ts";
import { jsend } from "../../trpc/envelopes.ts";

export const takeBackup = teamProcedure("routers:write")
  .meta({
    openapi: {
      method: "POST",
      path: "/api/routers/{router_id}/backups",
      tags: ["backups"],
      summary: "Back up the router's configuration now",
      description:
        "Queues a job that reads `/export terse` from the router (after the router's earlier jobs) and stores it " +
        "as a new version if it changed. Answers at once with the job's id.",
      successDescription: "Accepted",
    },
    successStatus: 202,
    rest: { errors: [409, 503] },
  })
  .input(ZTakeBackupInput)
  .output(ZBackupJob)
  .mutation(jsend(({ ctx, input }) => ctx.services.backups.take(ctx.teamId, input)));
