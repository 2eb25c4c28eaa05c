import { createRequire } from "node:module";
import path from "node:path";
import express, { type Router } from "express";

const require = createRequire(import.meta.url);

/**
 * The policy of every /docs answer: scripts, styles and the document from this origin only, no
 * inline script, never framed (docs/api.md, `/docs`).
 */
export const DOCS_CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

/**
 * The only files of swagger-ui-dist the page loads. The package's demo pages (`index.html`,
 * `oauth2-redirect.html`, its initializer) would run on the API's origin: they are not served.
 */
const ASSETS = ["swagger-ui.css", "swagger-ui-bundle.js"] as const;

/** Swagger UI served from the installed package: the docs page works with no internet. */
export const docsRouter = (): Router => {
  const dist = path.dirname(require.resolve("swagger-ui-dist/package.json"));
  const router = express.Router();
  router.use("/docs", (_req, res, next) => {
    res.setHeader("Content-Security-Policy", DOCS_CONTENT_SECURITY_POLICY);
    res.setHeader("X-Frame-Options", "DENY");
    res.setHeader("Referrer-Policy", "no-referrer");
    next();
  });
  for (const asset of ASSETS) {
    const file = path.join(dist, asset);
    router.get(`/docs/assets/${asset}`, (_req, res, next) => {
      res.sendFile(file, { maxAge: "1h", dotfiles: "deny" }, (error) => {
        if (error && !res.headersSent) next(error);
      });
    });
  }
  router.get("/docs", (_req, res) => {
    res.type("html").send(`<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8" />
  <title>Fleet API documentation</title>
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css" />
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script src="/docs/docs-init.js"></script>
</body>
</html>`);
  });
  // A separate file instead of an inline script keeps the strict policy above possible. No
  // validator badge: it would load an image from validator.swagger.io.
  router.get("/docs/docs-init.js", (_req, res) => {
    res
      .type("application/javascript")
      .send(
        `window.ui = SwaggerUIBundle({ url: "/openapi.json", dom_id: "#swagger-ui", deepLinking: true, persistAuthorization: true, validatorUrl: null });`,
      );
  });
  return router;
};
