import { Router, type NextFunction, type Request, type Response } from "express";
import type { Services } from "../services.ts";

/** Where adoption scripts are served; the token after it is a credential (docs/routeros.md "Adoption"). */
export const ADOPTION_SCRIPT_PATH = "/api/adoption";

/** The script path however it is typed: Express matches paths case-insensitively, and tolerates more slashes. */
const ADOPTION_PATH_ANY_CASE = /^\/+api\/+adoption\/+[^/]/i;
/** Anything shaped like an adoption token (`ad_`, the underscore perhaps percent-encoded), anywhere. */
const TOKEN_SHAPE = /ad(?:_|%5f)[A-Za-z0-9_%-]{8,}/gi;

/**
 * Request logs show the path without the token (docs/routeros.md "Adoption"), whatever its case,
 * its slashes or its percent-encoding: the script path becomes `/api/adoption/[redacted]`, and a
 * token-shaped segment of any other path is masked too.
 */
export const redactAdoptionPath = (path: string): string => {
  // Both shapes start with "ad"; without an escape, decoding changes nothing: most paths end here.
  if (!path.includes("%") && !/ad/i.test(path)) return path;
  let decoded = path;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    // A malformed escape: judge the raw path.
  }
  if (ADOPTION_PATH_ANY_CASE.test(path) || ADOPTION_PATH_ANY_CASE.test(decoded)) {
    return `${ADOPTION_SCRIPT_PATH}/[redacted]`;
  }
  return path.replace(TOKEN_SHAPE, "ad_[redacted]");
};

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
