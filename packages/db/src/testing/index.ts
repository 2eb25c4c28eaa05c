export * from "./factories.ts";
export * from "./test-database.ts";
