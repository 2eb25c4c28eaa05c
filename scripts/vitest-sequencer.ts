import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * Files that start real processes (whole apps, a browser, `npm start`) run for minutes on PGlite,
 * where every process opens its own embedded database. Vitest runs files it has timed before
 * longest first; on a clean checkout (CI's first pass) it knows no times and orders by size, which
 * can leave one of these to start last and run alone at the end. They go first when untimed.
 */
const SLOW_WHEN_UNTIMED = [/^test\/system\//, /^test\/admin\//, /^test\/console\//, /^test\/repo\/readme-commands/];

export default class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const root = this.ctx.config.root;
    const untimedSlow = (spec: TestSpecification) => {
      const rel = spec.moduleId.slice(root.length + 1);
      return (
        SLOW_WHEN_UNTIMED.some((pattern) => pattern.test(rel)) &&
        !this.ctx.cache.getFileTestResults(`${spec.project.name}:${rel}`)
      );
    };
    return [...sorted.filter(untimedSlow), ...sorted.filter((spec) => !untimedSlow(spec))];
  }
}
