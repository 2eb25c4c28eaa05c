import { ZLoginHookInput, ZLoginHookResult } from "@fleet/shared";
import { publicProcedure } from "../../trpc/init.ts";
import { addressKey } from "../../trpc/rate-limit.ts";

export const loginHook = publicProcedure
  .meta({
    openapi: {
      method: "POST",
      path: "/v1/auth/login-hook",
      tags: ["auth"],
      summary: "Identity-provider login hook",
      description:
        "Protected by AUTH_LOGIN_HOOK_SECRET (as a bearer token). Runs the authentication workflow and answers the ids to put in the access token's claims.",
    },
    successStatus: 200,
    rest: { auth: "login-hook", errors: [404] },
    noStore: true,
  })
  // docs/api.md "Rate limits": every call counts against its source address's limit of requests
  // without a user's credential (the shared secret cannot be guessed at speed); then the caller,
  // so a wrong secret answers 401 whatever the body holds (docs/api.md "Authentication").
  .use(async ({ ctx, next }) => {
    if (ctx.services.auth.loginHookEnabled)
      await ctx.services.rateLimits.unauthenticated.hit(`ip:${addressKey(ctx.ip)}`);
    ctx.services.auth.assertLoginHookCaller(ctx.authorization);
    return next();
  })
  .input(ZLoginHookInput)
  .output(ZLoginHookResult)
  .mutation(({ ctx, input }) => ctx.services.auth.loginHook(ctx.authorization, input.email));
