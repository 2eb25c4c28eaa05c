import type { Reporter, TestModule, TestSpecification } from "vitest/node";

/**
 * `npm test` progress (docs/contributing.md "Add a test"): one line per finished test file, with
 * how many of all are done, how many failed so far and the time since the run started, e.g.
 * `[ 12/87 files,  0 failed, 1m05s] ✓ apps/api/src/features/forwards/forwards.test.ts (66 tests, 41.2 s)`.
 * The default reporter still prints the details and the summary; this only says how far it got.
 */
export default class ProgressReporter implements Reporter {
  #total = 0;
  #done = 0;
  #failed = 0;
  #started = Date.now();
  readonly #write: (line: string) => void;

  constructor(write: (line: string) => void = (line) => process.stderr.write(`${line}\n`)) {
    this.#write = write;
  }

  onTestRunStart(specifications: ReadonlyArray<TestSpecification>): void {
    this.#total = new Set(specifications.map((s) => s.moduleId)).size;
    this.#done = 0;
    this.#failed = 0;
    this.#started = Date.now();
    this.#write(`[progress] ${this.#total} test files to run`);
  }

  onTestModuleEnd(module: TestModule): void {
    this.#done += 1;
    const ok = module.ok();
    if (!ok) this.#failed += 1;
    let tests = 0;
    for (const _ of module.children.allTests()) tests += 1;
    const width = String(this.#total).length;
    const seconds = (module.diagnostic().duration / 1000).toFixed(1);
    this.#write(
      `[${String(this.#done).padStart(width)}/${this.#total} files, ${String(this.#failed).padStart(2)} failed, ${elapsed(Date.now() - this.#started)}] ` +
        `${ok ? "✓" : "✗"} ${module.relativeModuleId} (${tests} tests, ${seconds} s)`,
    );
  }
}

const elapsed = (ms: number): string => {
  const s = Math.floor(ms / 1000);
  return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
};
