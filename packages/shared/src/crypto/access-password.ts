import { createHmac } from "node:crypto";

const ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789";

/**
 * The password of a temporary router user (docs/api.md "Temporary router access"), derived from the
 * access id with `ACCESS_PASSWORD_KEY`: the API shows it once and the tunnel agent sets it on the
 * router, and neither stores it anywhere. 24 characters from a 57-letter alphabet (about 140 bits).
 */
export const deriveAccessPassword = (key: string, accessId: string): string => {
  const mac = createHmac("sha256", key).update(`fleet-access:${accessId.toLowerCase()}`).digest();
  let out = "";
  for (let i = 0; i < 24; i++) out += ALPHABET[(mac[i] ?? 0) % ALPHABET.length];
  return out;
};
