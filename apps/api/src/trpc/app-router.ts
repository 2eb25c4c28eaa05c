import { accountRouter } from "../features/account/account.router.ts";
import { authRouter } from "../features/auth/auth.router.ts";
import { forwardsRouter } from "../features/forwards/forwards.router.ts";
import { invoicesRouter } from "../features/invoices/invoices.router.ts";
import { paymentMethodsRouter } from "../features/payment-methods/payment-methods.router.ts";
import { routersRouter } from "../features/routers/routers.router.ts";
import { router } from "./init.ts";

/** The one procedure set behind tRPC (/trpc), REST (spec paths) and /openapi.json. */
export const appRouter = router({
  auth: authRouter,
  account: accountRouter,
  paymentMethods: paymentMethodsRouter,
  invoices: invoicesRouter,
  forwards: forwardsRouter,
  routers: routersRouter,
});

export type AppRouter = typeof appRouter;
