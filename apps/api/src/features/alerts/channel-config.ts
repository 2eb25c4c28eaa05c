import type { TChannelType } from "@fleet/shared";

/** The secret fields of each channel type: sealed at rest, masked when read back. */
export const SECRET_FIELDS: Record<TChannelType, readonly string[]> = {
  email: [],
  slack: ["webhook_url"],
  teams: ["webhook_url"],
  telegram: ["bot_token"],
  pagerduty: ["routing_key"],
};

/**
 * How a secret is shown: its last four characters (a URL keeps its origin, whose path is the
 * secret). Sent back unchanged in a PATCH, a mask keeps the stored value.
 */
export const maskSecret = (field: string, value: string): string => {
  const tail = value.slice(-4);
  if (field === "webhook_url") {
    try {
      return `${new URL(value).origin}/****${tail}`;
    } catch {
      return `****${tail}`;
    }
  }
  return `****${tail}`;
};

/** Splits a validated config into what is stored in clear and what is sealed. */
export const splitConfig = (
  type: TChannelType,
  config: Record<string, unknown>,
): { open: Record<string, unknown>; secret: Record<string, string> | null } => {
  const open: Record<string, unknown> = {};
  const secret: Record<string, string> = {};
  for (const [key, value] of Object.entries(config)) {
    if (SECRET_FIELDS[type].includes(key)) secret[key] = String(value);
    else open[key] = value;
  }
  return { open, secret: Object.keys(secret).length > 0 ? secret : null };
};

/** The config as answered: open fields, secrets masked. */
export const maskedConfig = (
  type: TChannelType,
  open: Record<string, unknown>,
  secret: Record<string, string> | null,
): Record<string, unknown> => {
  const masked: Record<string, unknown> = { ...open };
  for (const field of SECRET_FIELDS[type]) {
    const value = secret?.[field];
    if (value !== undefined) masked[field] = maskSecret(field, value);
  }
  return masked;
};
