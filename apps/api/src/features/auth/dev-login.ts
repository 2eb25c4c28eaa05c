import { ZDevLoginInput, ZLoginResult } from "@fleet/shared";
import { publicProcedure } from "../../trpc/init.ts";

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
  })
  .input(ZDevLoginInput)
  .output(ZLoginResult)
  .mutation(({ ctx, input }) => ctx.services.auth.devLogin(input));
