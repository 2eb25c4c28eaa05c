import type { MigrationObject } from "@mikro-orm/core";
import { AccountsMigration } from "./20261121-001-accounts.migration.ts";
import { RoutersMigration } from "./20261121-003-routers.migration.ts";

/**
 * Every migration in order, listed explicitly. Hand-written SQL that runs unchanged on PostgreSQL
 * and PGlite; `schema-drift.test.ts` proves the result matches the entities.
 */
export const MIGRATIONS: MigrationObject[] = [
  { name: "20261121-001-accounts", class: AccountsMigration },
  // 002 is reserved for the billing (payments/subscriptions) migration.
  { name: "20261121-003-routers", class: RoutersMigration },
];
