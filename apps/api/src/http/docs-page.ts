import { createRequire } from "node:module";
import path from "node:path";
import express, { type Router } from "express";

const require = createRequire(import.meta.url);

/** Swagger UI served from the installed package: the docs page works with no internet. */
export const docsRouter = (): Router => {
  const assets = path.dirname(require.resolve("swagger-ui-dist/package.json"));
  const router = express.Router();
  router.use("/docs/assets", express.static(assets, { index: false, maxAge: "1h" }));
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
  // A separate file instead of an inline script keeps a strict Content-Security-Policy possible.
  router.get("/docs/docs-init.js", (_req, res) => {
    res
      .type("application/javascript")
      .send(
        `window.ui = SwaggerUIBundle({ url: "/openapi.json", dom_id: "#swagger-ui", deepLinking: true, persistAuthorization: true });`,
      );
  });
  return router;
};
