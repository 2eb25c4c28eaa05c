/**
 * pino redaction paths used by every process: secrets never reach logs (docs/operations.md "Configuration").
 * Values are replaced, keys kept, so a log still shows that a header was present.
 */
export const REDACT_PATHS = [
  "authorization",
  "*.authorization",
  "req.headers.authorization",
  "headers.authorization",
  "req.headers.cookie",
  "client_secret",
  "*.client_secret",
  "access_token",
  "*.access_token",
  "heartbeat_token",
  "*.heartbeat_token",
  "token",
  "*.token",
  "secret",
  "*.secret",
  "secretKey",
  "*.secretKey",
  "privateKey",
  "*.privateKey",
  "password",
  "*.password",
];
