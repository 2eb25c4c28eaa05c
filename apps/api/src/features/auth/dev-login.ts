import { ZDevLoginInput, ZLoginResult } from "@fleet/shared";
import { publicProcedure } from "../../trpc/init.ts";
import { addressKey } from "../../trpc/rate-limit.ts";

export const devLogin = publicProcedure
  .meta({
    openapi: {
      method: "POST",
      path: "/v1/auth/dev-login",
      tags: ["auth"],
      protect: false,
      summary: "Development login: get an access token for an email",
      description:
        "Only when AUTH_DEV_LOGIN is on. Runs the authentication workflow: an unknown user gets a default organization and team, and no billing account.",
    },
    successStatus: 200,
    rest: { auth: "none", errors: [404] },
    noStore: true,
  })
  // docs/api.md "Authentication": 10 per minute per source address, counted only while it is on.
  .use(async ({ ctx, next }) => {
    if (ctx.services.auth.devLoginEnabled)
      await ctx.services.rateLimits.devLogin.hit(ctx.req, ctx.res, addressKey(ctx.ip));
    return next();
  })
  .input(ZDevLoginInput)
  .output(ZLoginResult)
  .mutation(({ ctx, input }) => ctx.services.auth.devLogin(input));
