import { Router, type NextFunction, type Request, type Response } from "express";
import { LOGIN_COOKIE } from "../features/auth/sign-in.service.ts";
import { readCookie, setCookie } from "../features/auth/session-cookies.ts";
import type { Services } from "../services.ts";
import { addressKey } from "../trpc/rate-limit.ts";

/** The browser's side of sign-in (docs/api.md "Sign-in"): redirects and cookies, not JSON procedures. */
export const SIGN_IN_PATH = /^\/+v1\/+auth\/+oidc(?:\/|$)/i;

/**
 * `GET /v1/auth/oidc/start` and `GET /v1/auth/oidc/callback`. Errors take the `/v1` shape through
 * the app's error handler (400 for a failed check, with no cookie set).
 */
export const signInRoutes = (services: Services): Router => {
  const router = Router();
  // Anyone may call these: counted per source address like other requests without a credential.
  const limited = async (req: Request) =>
    services.rateLimits.unauthenticated.hit(`ip:${addressKey(services.clientAddress(req))}`);

  router.get("/v1/auth/oidc/start", async (req: Request, res: Response, next: NextFunction) => {
    res.setHeader("Cache-Control", "no-store");
    try {
      await limited(req);
      const { location, cookie } = await services.signIn.start(req.query.return_to);
      setCookie(res, cookie, services.signIn.secureCookies);
      res.redirect(302, location);
    } catch (error) {
      next(error);
    }
  });

  router.get("/v1/auth/oidc/callback", async (req: Request, res: Response, next: NextFunction) => {
    res.setHeader("Cache-Control", "no-store");
    try {
      await limited(req);
      const query = new URLSearchParams(req.url.split("?", 2)[1] ?? "");
      const { location, cookie } = await services.signIn.callback(query, readCookie(req, LOGIN_COOKIE));
      setCookie(res, cookie, services.signIn.secureCookies);
      setCookie(
        res,
        { name: LOGIN_COOKIE, value: "", path: "/v1/auth/oidc", maxAge: 0 },
        services.signIn.secureCookies,
      );
      res.redirect(302, location);
    } catch (error) {
      next(error);
    }
  });
  return router;
};
