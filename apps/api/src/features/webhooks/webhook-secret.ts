import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";

/** `whsec_` + base64 of 32 random bytes (Standard Webhooks secret format). */
export const newWebhookSecret = (): string => `whsec_${randomBytes(32).toString("base64")}`;

/**
 * Webhook secrets at rest. HMAC signing needs the secret itself, so it cannot be hashed like an
 * API key: it is sealed with AES-256-GCM under a key derived from `WEBHOOK_ENCRYPTION_KEY`
 * (docs/operations.md "Configuration"). A database dump alone does not reveal any secret.
 */
export class SecretBox {
  readonly #key: Buffer;
  constructor(keyMaterial: string) {
    this.#key = createHash("sha256").update(`fleet-webhook-secrets:${keyMaterial}`).digest();
  }

  seal(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.#key, iv);
    const data = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
    return `v1.${Buffer.concat([iv, cipher.getAuthTag(), data]).toString("base64url")}`;
  }

  open(sealed: string): string {
    const raw = Buffer.from(sealed.replace(/^v1\./, ""), "base64url");
    const decipher = createDecipheriv("aes-256-gcm", this.#key, raw.subarray(0, 12));
    decipher.setAuthTag(raw.subarray(12, 28));
    return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString("utf8");
  }
}
