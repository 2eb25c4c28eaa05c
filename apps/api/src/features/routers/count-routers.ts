import { ZRouterCounts } from "@fleet/shared";
import { z } from "zod";
import { teamProcedure } from "../../trpc/init.ts";

/** tRPC only (the console's fleet header): counts without reading the fleet. */
export const countRouters = teamProcedure("routers:read")
  .input(z.void())
  .output(ZRouterCounts)
  .query(({ ctx }) => ctx.services.routers.counts(ctx.teamId));
