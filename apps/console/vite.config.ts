import react from "@vitejs/plugin-react";
import { defineConfig, type Plugin } from "vite";

/**
 * docs/console.md "Development": `npm run dev:console` serves the console with hot reload and passes
 * tRPC (and the emulator's card endpoints) to a running system at FLEET_API_URL.
 */
const api = process.env.FLEET_API_URL ?? "http://127.0.0.1:3000";

/** In development the page's configuration comes from the running API's own /console page. */
const configFromApi = (): Plugin => ({
  name: "console-config-from-api",
  apply: "serve",
  async transformIndexHtml(html) {
    const page = await fetch(`${api}/console/`)
      .then((r) => r.text())
      .catch(() => "");
    const block = /<script id="console-config" type="application\/json">[^<]*<\/script>/.exec(page)?.[0];
    return html.replace("<!--console-config-->", block ?? "");
  },
});

export default defineConfig({
  base: "/console/",
  plugins: [react(), configFromApi()],
  build: {
    outDir: "dist",
    assetsDir: "assets",
    target: "es2022",
    // No inline scripts or data: URLs for modules: the page's policy allows scripts from 'self' only.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
  },
  server: {
    port: Number(process.env.CONSOLE_DEV_PORT ?? 5173),
    strictPort: true,
    proxy: { "/trpc": api, "/console/processor": api },
  },
});
