import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["{apps,packages,test}/**/*.test.ts"],
    exclude: ["**/node_modules/**"],
    pool: "forks",
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
