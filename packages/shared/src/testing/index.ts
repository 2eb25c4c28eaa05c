// Test helpers shared by every workspace (docs/contributing.md "Add a test"); never imported by production code.
export { eventually } from "./eventually.ts";
export { OffsetClock } from "./offset-clock.ts";
