import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["{apps,packages,test}/**/*.test.ts"],
    exclude: ["**/node_modules/**"],
    pool: "forks",
    // More test files at once than cores: most of a file's time is spent waiting (sockets, timers,
    // child processes, the database). On the 2-core CI machine: PGlite 10.4 -> 6.7 min with 3
    // workers (PGlite runs in the worker, so CPU is the limit beyond that), PostgreSQL 6.4 -> 3.0
    // min with 4.
    maxWorkers: process.env.DATABASE_URL ? 4 : 3,
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
