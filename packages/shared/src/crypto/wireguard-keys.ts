import { createPrivateKey, createPublicKey, generateKeyPairSync } from "node:crypto";

/**
 * WireGuard keys are X25519 keys written as base64 of their 32 raw bytes (44 characters, one `=`).
 * Only the canonical form is accepted: the last character before `=` carries 4 padding bits that must
 * be zero, so one key has exactly one spelling (two spellings of one key could otherwise be bound to
 * two routers).
 */
export const WIREGUARD_KEY = /^[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=$/;

/** True for a canonical base64 WireGuard key (32 bytes). */
export const isWireguardKey = (value: unknown): value is string =>
  typeof value === "string" && WIREGUARD_KEY.test(value) && Buffer.from(value, "base64").length === 32;

// PKCS#8 wrapping of a raw X25519 private key (RFC 8410), so node:crypto can derive its public half.
const X25519_PKCS8_PREFIX = Buffer.from("302e020100300506032b656e04220420", "hex");

/** The public key (base64) of a WireGuard private key (base64); throws when it is not one. */
export const wireguardPublicKey = (privateKey: string): string => {
  if (!isWireguardKey(privateKey)) throw new Error("not a WireGuard key (44 characters of base64, 32 bytes)");
  const key = createPrivateKey({
    key: Buffer.concat([X25519_PKCS8_PREFIX, Buffer.from(privateKey, "base64")]),
    format: "der",
    type: "pkcs8",
  });
  const x = createPublicKey(key).export({ format: "jwk" }).x;
  if (!x) throw new Error("could not derive the WireGuard public key");
  return Buffer.from(x, "base64url").toString("base64");
};

/** A fresh WireGuard key pair (base64), as `wg genkey | wg pubkey` makes it. */
export const generateWireguardKeyPair = (): { privateKey: string; publicKey: string } => {
  const { privateKey, publicKey } = generateKeyPairSync("x25519");
  const d = privateKey.export({ format: "jwk" }).d;
  const x = publicKey.export({ format: "jwk" }).x;
  if (!d || !x) throw new Error("could not generate a WireGuard key pair");
  return {
    privateKey: Buffer.from(d, "base64url").toString("base64"),
    publicKey: Buffer.from(x, "base64url").toString("base64"),
  };
};

/** base64 -> lowercase hex, the form the WireGuard UAPI protocol (`set=1`) speaks. */
export const wireguardKeyHex = (key: string): string => Buffer.from(key, "base64").toString("hex");

/** lowercase hex (UAPI) -> base64. */
export const wireguardKeyFromHex = (hex: string): string => Buffer.from(hex, "hex").toString("base64");
