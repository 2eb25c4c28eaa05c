import { buildConsoleHere } from "./console-build.ts";

// `npm run build:console`: the bundle the API serves at /console (docs/console.md "Build").
const { dir, ms } = await buildConsoleHere();
process.stdout.write(`console built into ${dir} in ${ms} ms\n`);
