export * from "./factories.ts";
export * from "./test-database.ts";
export * from "./forward-factories.ts";
export { prepareMigratedTemplate, seedPgliteDataDir } from "./migrated-template.ts";
export { type OwnPostgres, startOwnPostgres } from "./own-postgres.ts";
