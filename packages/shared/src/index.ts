export * from "./errors/app-error.ts";
export * from "./rules/countries.ts";
export * from "./rules/date-format.ts";
export * from "./rules/clock.ts";
export * from "./env/env-parsers.ts";
export * from "./schemas/common.schema.ts";
export * from "./schemas/account.schema.ts";
export * from "./schemas/auth.schema.ts";
