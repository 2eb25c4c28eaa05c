import { readFile } from "node:fs/promises";
import path from "node:path";
import express, { type NextFunction, type Request, type Response, type Router } from "express";

/**
 * The operator console (docs/console.md): a built single-page app served from the API's own origin
 * at /console. It reaches the system only through tRPC; this module serves its files, tells it
 * how to sign in and which card flow to use, and fences it with a content security policy.
 */
export interface ConsoleOptions {
  /** The built bundle (`apps/console/dist`); missing: /console answers 503 saying how to build it. */
  dir: string;
  /** dev-login is on: the sign-in page offers it. */
  devLogin: boolean;
  /** Sign-in through an identity provider is on: the sign-in page shows its button with this name. */
  oidc?: { displayName: string } | undefined;
  /**
   * The card form's processor: real Stripe (Stripe.js from Stripe's origin, the only foreign origin
   * the policy admits) or the built-in emulator, whose two client-side endpoints are passed through
   * this origin (it listens on loopback only, so a browser elsewhere could not reach it).
   */
  processor: { kind: "stripe" } | { kind: "emulator"; apiBase: URL };
}

/** Where the console finds the emulator's client-side endpoints (`<this>/v1/...`). */
export const CONSOLE_PROCESSOR_PATH = "/console/processor";
/** A card form posts a few hundred bytes; nothing bigger is passed on. */
const PROCESSOR_BODY_LIMIT = 4 * 1024;
const CONFIG_PLACEHOLDER = "<!--console-config-->";

/** Stripe.js needs its script, its frames (card fields, 3-D Secure) and its API (Stripe's own CSP list). */
const STRIPE_SOURCES = {
  script: ["https://js.stripe.com"],
  frame: ["https://js.stripe.com", "https://hooks.stripe.com"],
  connect: ["https://api.stripe.com"],
};

/** The policy of every /console answer: this origin only, plus Stripe's script when real keys are set. */
export const consoleContentSecurityPolicy = (processor: ConsoleOptions["processor"]): string => {
  const stripe = processor.kind === "stripe";
  const list = (own: string[], extra: string[]) => [...own, ...(stripe ? extra : [])].join(" ") || "'none'";
  return [
    "default-src 'none'",
    `script-src ${list(["'self'"], STRIPE_SOURCES.script)}`,
    "style-src 'self'",
    "img-src 'self' data:",
    "font-src 'self'",
    `connect-src ${list(["'self'"], STRIPE_SOURCES.connect)}`,
    `frame-src ${list([], STRIPE_SOURCES.frame)}`,
    "manifest-src 'self'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join("; ");
};

/** What the page learns at load: JSON in a non-executing script block (allowed by the policy). */
const pageConfig = (o: ConsoleOptions) =>
  JSON.stringify({
    devLogin: o.devLogin,
    oidc: o.oidc ?? null,
    processor: o.processor.kind === "stripe" ? { kind: "stripe" } : { kind: "emulator", path: CONSOLE_PROCESSOR_PATH },
  }).replaceAll("<", "\\u003c");

export const consoleRouter = (o: ConsoleOptions): Router => {
  const router = express.Router();
  const csp = consoleContentSecurityPolicy(o.processor);
  const config = `<script id="console-config" type="application/json">${pageConfig(o)}</script>`;

  router.use("/console", (_req, res, next) => {
    res.setHeader("Content-Security-Policy", csp);
    res.setHeader("Referrer-Policy", "no-referrer");
    res.setHeader("X-Frame-Options", "DENY");
    next();
  });

  if (o.processor.kind === "emulator") router.use(CONSOLE_PROCESSOR_PATH, emulatorPassThrough(o.processor.apiBase));

  // Hashed file names: cached for good; everything else is the page, always revalidated.
  router.use(
    "/console/assets",
    express.static(path.join(o.dir, "assets"), { index: false, immutable: true, maxAge: "365d" }),
    (_req: Request, res: Response) => {
      res.status(404).type("text/plain").send("No such console asset.\n");
    },
  );
  router.get("/console", (req, res, next) => {
    // Express matches "/console/" here too (non-strict routing): only the bare path is redirected.
    if (req.path !== "/console") {
      next();
      return;
    }
    res.redirect(302, "/console/");
  });
  // Every other path under /console is a page of the app (client-side routing): the same document.
  router.get("/console/{*page}", async (_req, res, next) => {
    try {
      const html = await readFile(path.join(o.dir, "index.html"), "utf8").catch(() => undefined);
      if (html === undefined) {
        res
          .status(503)
          .type("text/plain")
          .send("The console is not built. Run `npm run build:console` (npm start builds it by itself).\n");
        return;
      }
      res.setHeader("Cache-Control", "no-cache");
      res.type("html").send(html.replace(CONFIG_PLACEHOLDER, config));
    } catch (error) {
      next(error);
    }
  });
  return router;
};

/** The emulator's ids are letters, digits and underscores after their prefix. */
const SETUP_INTENT_ID = /^seti_[A-Za-z0-9_]{1,64}$/;

/**
 * Stripe.js's two calls, passed to the built-in emulator unchanged: create a card payment method and
 * confirm a setup intent, both with the publishable key. Nothing else of the emulator is reachable.
 */
const emulatorPassThrough = (apiBase: URL): Router => {
  const router = express.Router();
  const form = express.raw({ type: "application/x-www-form-urlencoded", limit: PROCESSOR_BODY_LIMIT });
  const pass =
    (target: (req: Request) => string | undefined) => async (req: Request, res: Response, next: NextFunction) => {
      const suffix = target(req);
      if (suffix === undefined || !Buffer.isBuffer(req.body)) {
        res.status(400).json({ error: { type: "invalid_request_error", message: "Unsupported request." } });
        return;
      }
      try {
        const answer = await fetch(new URL(suffix, apiBase), {
          method: "POST",
          headers: {
            "content-type": "application/x-www-form-urlencoded",
            ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}),
          },
          body: req.body,
          signal: AbortSignal.timeout(10_000),
        });
        res
          .status(answer.status)
          .type("application/json")
          .send(Buffer.from(await answer.arrayBuffer()));
      } catch (error) {
        next(error);
      }
    };
  router.post(
    "/v1/payment_methods",
    form,
    pass(() => "/v1/payment_methods"),
  );
  router.post(
    "/v1/setup_intents/:id/confirm",
    form,
    pass((req) => {
      const id = String(req.params.id);
      return SETUP_INTENT_ID.test(id) ? `/v1/setup_intents/${id}/confirm` : undefined;
    }),
  );
  router.use((_req, res) => {
    res.status(404).json({ error: { type: "invalid_request_error", message: "Unrecognized request URL." } });
  });
  return router;
};
