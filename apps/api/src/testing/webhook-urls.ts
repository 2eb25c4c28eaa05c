/**
 * docs/api.md "Audit log and webhooks": IPv6 literals that embed a non-public IPv4 address (loopback,
 * private, link-local) in each form the rule knows; refused at creation and at delivery without
 * WEBHOOK_ALLOW_PRIVATE.
 */
export const EMBEDDED_PRIVATE_IPV4_URLS = [
  "https://[::127.0.0.1]/",
  "https://[::10.0.0.1]/",
  "https://[::7f00:1]/",
  "https://[::ffff:7f00:1]/",
  "https://[::ffff:0:a9fe:a9fe]/",
  "https://[64:ff9b::169.254.169.254]/",
  "https://[64:ff9b::a00:1]/",
  "https://[2002:7f00:1::1]/",
  "https://[2002:c0a8:101::]/",
] as const;
