import { createHmac, randomBytes } from "node:crypto";
import { HEARTBEAT_TOKEN_PREFIX } from "@fleet/shared";

/**
 * Tokens of adoption (docs/routeros.md "Adoption"). The URL's token (`ad_` + 256 random bits) is the
 * credential of the script endpoint; the heartbeat token the script carries is derived from it
 * (HMAC-SHA256), so the script can be written again from the URL alone while the database keeps
 * only SHA-256 hashes of both. Knowing a heartbeat token reveals nothing about its URL.
 */
export const newAdoptionToken = (): string => `ad_${randomBytes(32).toString("base64url")}`;

/** `hb_` + 43 base64url characters: the same shape as every other heartbeat token. */
export const heartbeatTokenFor = (adoptionToken: string): string =>
  `${HEARTBEAT_TOKEN_PREFIX}${createHmac("sha256", adoptionToken).update("fleet heartbeat token v1").digest("base64url")}`;

/** Shape check before hashing: a guessed path that cannot be a token never reaches the database. */
export const isAdoptionToken = (value: string): boolean => /^ad_[A-Za-z0-9_-]{43}$/.test(value);
