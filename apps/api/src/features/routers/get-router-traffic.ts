import { AppError, ZRouterTraffic, ZRouterTrafficQuery } from "@fleet/shared";
import { jsend } from "../../trpc/envelopes.ts";
import { teamProcedure } from "../../trpc/init.ts";

/**
 * The path's `{name}` as the router reported it: trpc-to-openapi hands path parameters over still
 * percent-encoded (`vlan%2F10`), so REST decodes it here; tRPC sends it as it is.
 */
const decodedName = (name: string): string => {
  try {
    return decodeURIComponent(name);
  } catch {
    throw new AppError("validation_failed", "'name' must be percent-encoded UTF-8.", {
      fields: { name: ["must be percent-encoded UTF-8"] },
    });
  }
};

export const getRouterTraffic = teamProcedure("routers:read")
  .meta({
    openapi: {
      method: "GET",
      path: "/api/routers/{router_id}/interfaces/{name}/traffic",
      tags: ["routers"],
      summary: "One interface's traffic (bits per second) and errors over time",
      description: "`from`, `to` and `step` as for /resources; a counter reset gives no rate (null), never a spike.",
    },
    successStatus: 200,
  })
  .input(ZRouterTrafficQuery)
  .output(ZRouterTraffic)
  .query(
    jsend(({ ctx, input }) =>
      ctx.services.routerHealth.traffic(
        ctx.teamId,
        ctx.transport === "rest" ? { ...input, name: decodedName(input.name) } : input,
      ),
    ),
  );
