export * from "./database.ts";
export * from "./entities/index.ts";
export * from "./repositories/accounts.repository.ts";
export * from "./repositories/identity.repository.ts";
export { isUniqueViolation } from "./repositories/sql-values.ts";
