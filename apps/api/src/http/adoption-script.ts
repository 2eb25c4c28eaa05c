import { Router, type NextFunction, type Request, type Response } from "express";
import type { Services } from "../services.ts";

/** Where adoption scripts are served; the token after it is a credential (docs/routeros.md "Adoption"). */
export const ADOPTION_SCRIPT_PATH = "/api/adoption";

/** Request logs show the path without the token. */
export const redactAdoptionPath = (path: string): string =>
  path.startsWith(`${ADOPTION_SCRIPT_PATH}/`) ? `${ADOPTION_SCRIPT_PATH}/[redacted]` : path;

/**
 * `GET /api/adoption/<token>`: the RouterOS script as `text/plain`, with no bearer header (the URL is
 * the credential). Errors (404 unknown, 410 used or expired) take the `/api` JSend shape through the
 * app's error handler and say nothing about the router.
 */
export const adoptionScriptRoute = (services: Services): Router => {
  const router = Router();
  router.get(`${ADOPTION_SCRIPT_PATH}/:token`, async (req: Request, res: Response, next: NextFunction) => {
    res.setHeader("Cache-Control", "no-store");
    try {
      const script = await services.adoption.script(String(req.params.token));
      res.status(200).type("text/plain; charset=utf-8").send(script);
    } catch (error) {
      next(error);
    }
  });
  return router;
};
