import { ZLoginHookInput, ZLoginHookResult } from "@fleet/shared";
import { publicProcedure } from "../../trpc/init.ts";

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
  // The caller first: a wrong secret answers 401 whatever the body holds (docs/api.md "Authentication").
  .use(({ ctx, next }) => {
    ctx.services.auth.assertLoginHookCaller(ctx.authorization);
    return next();
  })
  .input(ZLoginHookInput)
  .output(ZLoginHookResult)
  .mutation(({ ctx, input }) => ctx.services.auth.loginHook(ctx.authorization, input.email));
