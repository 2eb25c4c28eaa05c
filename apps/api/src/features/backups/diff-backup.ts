import { ZDiffBackupInput } from "@fleet/shared";
import { z } from "zod";
import { teamProcedure } from "../../trpc/init.ts";

export const diffBackup = teamProcedure("routers:read")
  .meta({
    openapi: {
      method: "GET",
      path: "/api/routers/{router_id}/backups/{id}/diff",
      tags: ["backups"],
      summary: "What changed: a unified diff (`text/plain`)",
      description:
        "From `against` (another version of the same router; default: the version before) to this one, " +
        "both without RouterOS's dated first comment line. Computed off the event loop within 5 s; " +
        "versions too far apart for that answer 422 `diff_too_large`, and 503 with `Retry-After` while " +
        "too many diffs are being computed.",
    },
    successStatus: 200,
    rest: { text: "text/plain", errors: [503] },
  })
  .input(ZDiffBackupInput)
  .output(z.string())
  .query(({ ctx, input }) => ctx.services.backups.diff(ctx.teamId, input));
