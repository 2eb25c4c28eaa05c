import { prepareMigratedTemplate } from "@fleet/db/testing";

/** vitest's globalSetup: the run's migrated template database (packages/db/src/testing/migrated-template.ts). */
export default async function setup(): Promise<() => Promise<void>> {
  return prepareMigratedTemplate();
}
