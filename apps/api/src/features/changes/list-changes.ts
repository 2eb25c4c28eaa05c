import { ZChangeListQuery, ZChangePage } from "@fleet/shared";
import { authedProcedure } from "../../trpc/init.ts";
import { jsend } from "../../trpc/envelopes.ts";

export const listChanges = authedProcedure("routers:read")
  .meta({
    openapi: {
      method: "GET",
      path: "/api/changes",
      tags: ["changes"],
      summary: "The organization's changes, newest first",
      description: "Pages of up to `limit` (1..200, default 50); pass `next_cursor` back as `cursor` for older ones.",
    },
    successStatus: 200,
  })
  .input(ZChangeListQuery)
  .output(ZChangePage)
  .query(
    jsend.page(async ({ ctx, input }) =>
      ctx.services.changes.list(ctx.auth.organizationId, input ?? {}, await ctx.services.teams.bound(ctx.auth)),
    ),
  );
