import { ZAuthTokenInput, ZAuthTokenResult } from "@fleet/shared";
import { publicProcedure } from "../../trpc/init.ts";
import { sessionRequest } from "./session-cookies.ts";

export const issueToken = publicProcedure
  .meta({
    openapi: {
      method: "POST",
      path: "/v1/auth/token",
      tags: ["auth"],
      protect: false,
      summary: "An access token of the signed-in session",
      description:
        "With the fleet_session cookie. The token (at most 15 minutes) acts in the chosen organization (default: the current one, which the choice replaces) with the scopes of the user's role there.",
    },
    successStatus: 200,
    rest: { auth: "none", errors: [401, 403, 404] },
    noStore: true,
  })
  .input(ZAuthTokenInput)
  .output(ZAuthTokenResult)
  .mutation(({ ctx, input }) => ctx.services.signIn.token(sessionRequest(ctx.req), input.organization_id));
