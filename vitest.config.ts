import { defineConfig } from "vitest/config";
import ProgressReporter from "./scripts/vitest-progress-reporter.ts";
import SlowFirstSequencer from "./scripts/vitest-sequencer.ts";

export default defineConfig({
  test: {
    include: ["{apps,packages,test}/**/*.test.ts"],
    exclude: ["**/node_modules/**"],
    pool: "forks",
    // One migrated database per run that every test database copies (docs/contributing.md "Add a test").
    globalSetup: ["./scripts/vitest-global-setup.ts"],
    // More test files at once than cores: most of a file's time is spent waiting (sockets, timers,
    // child processes, the database). On the 2-core CI machine with 3 workers: PGlite 10.4 -> 6.5
    // min (PGlite runs in the worker, so CPU is the limit beyond that), PostgreSQL 6.4 -> 3.1 min.
    // 4 workers on PostgreSQL once failed two timing-sensitive API tests; 3 ran green.
    maxWorkers: 3,
    // A worker keeps the modules it imported from one test file to the next instead of starting a
    // fresh process per file: every API file imported the whole app again (tRPC, zod schemas,
    // MikroORM, pg-boss, the stripe SDK). apps/api/src/features on a loaded 2-core machine:
    // 4m12s -> 2m00s (import 164 s -> 15 s); the whole PGlite suite 9m20s -> 7m09s. The cost is
    // that process-wide state outlives a file: a test reads a process-wide counter (prom-client's
    // registry) as a before/after difference, and puts back what it changes globally (a tracer).
    isolate: false,
    sequence: { sequencer: SlowFirstSequencer },
    // The default reporter's details and summary, plus one progress line per finished file.
    reporters: ["default", new ProgressReporter()],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
