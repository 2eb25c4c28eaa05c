import { ZLogoutResult } from "@fleet/shared";
import { z } from "zod";
import { publicProcedure } from "../../trpc/init.ts";
import { sessionRequest, setCookie } from "./session-cookies.ts";

export const logout = publicProcedure
  .meta({
    openapi: {
      method: "POST",
      path: "/v1/auth/logout",
      tags: ["auth"],
      protect: false,
      summary: "End the sign-in session",
      description: "Clears the fleet_session cookie; every token minted from the session answers 401 within 10 s.",
    },
    successStatus: 200,
    rest: { auth: "none", errors: [403] },
    noStore: true,
  })
  .input(z.object({}).optional())
  .output(ZLogoutResult)
  .mutation(async ({ ctx }) => {
    const cleared = await ctx.services.signIn.logout(sessionRequest(ctx.req));
    setCookie(ctx.res, cleared, ctx.services.signIn.secureCookies);
    return { signed_out: true as const };
  });
