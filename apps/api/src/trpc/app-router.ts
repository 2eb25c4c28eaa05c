import { accountRouter } from "../features/account/account.router.ts";
import { authRouter } from "../features/auth/auth.router.ts";
import { router } from "./init.ts";

/** The one procedure set behind tRPC (/trpc), REST (spec paths) and /openapi.json. */
export const appRouter = router({
  auth: authRouter,
  account: accountRouter,
});

export type AppRouter = typeof appRouter;
