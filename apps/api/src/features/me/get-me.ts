import { ZMe } from "@fleet/shared";
import { z } from "zod";
import { authedProcedure } from "../../trpc/init.ts";

export const getMe = authedProcedure(null)
  .meta({
    openapi: {
      method: "GET",
      path: "/v1/me",
      tags: ["auth"],
      summary: "Who the token is: the user, the organization it acts in, the role there, and the user's organizations",
    },
    successStatus: 200,
  })
  .input(z.object({}).optional())
  .output(ZMe)
  .query(({ ctx }) => ctx.services.signIn.me(ctx.auth));
