/** The text form of a UUID (any version, either case): what a `uuid` column accepts. */
export const UUID_PATTERN = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}";

const UUID = new RegExp(`^${UUID_PATTERN}$`);

/**
 * True for a UUID. Anything else cannot name a row: repositories answer "not found" for it
 * instead of sending it to a `uuid` column, where PostgreSQL would refuse the whole statement.
 */
export const isUuid = (value: unknown): value is string => typeof value === "string" && UUID.test(value);
