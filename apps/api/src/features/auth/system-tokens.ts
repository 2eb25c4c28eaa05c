import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from "node:crypto";
import { decodeProtectedHeader, exportJWK, type JWK, type JWTPayload, jwtVerify, SignJWT } from "jose";

/** The longest life of a token the system signs (docs/api.md "Sign-in": at most 15 minutes). */
export const SYSTEM_TOKEN_TTL_SECONDS = 900;

/** What a system token says (docs/api.md "Authentication", "Sign-in"). */
export interface SystemTokenClaims {
  userId: string;
  organizationId: string;
  scope: string;
  teamId?: string | undefined;
  timezone?: string | undefined;
  /** The sign-in session the token was minted from (`sid`). */
  sessionId: string;
}

/** A new Ed25519 key as PKCS#8 PEM: the development default of AUTH_SIGNING_KEY, kept in DATA_DIR. */
export const generateSigningKeyPem = (): string =>
  generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }).toString();

/**
 * The system's own access tokens (docs/api.md "Sign-in"): signed with AUTH_SIGNING_KEY (EdDSA for
 * Ed25519, ES256 for P-256), told from other tokens by their `kid` (the public key's digest), and
 * published at `/.well-known/jwks.json`.
 */
export class SystemTokens {
  readonly alg: "EdDSA" | "ES256";
  readonly kid: string;
  readonly #private: KeyObject;
  readonly #public: KeyObject;
  #jwk: JWK | undefined;

  constructor(pem: string) {
    this.#private = createPrivateKey({ key: pem, format: "pem" });
    this.#public = createPublicKey(this.#private);
    this.alg = this.#private.asymmetricKeyType === "ed25519" ? "EdDSA" : "ES256";
    const spki = this.#public.export({ type: "spki", format: "der" });
    this.kid = createHash("sha256").update(spki).digest("base64url").slice(0, 22);
  }

  /** The public half as a JWK Set. */
  async jwks(): Promise<{ keys: JWK[] }> {
    this.#jwk ??= { ...(await exportJWK(this.#public)), kid: this.kid, alg: this.alg, use: "sig" };
    return { keys: [this.#jwk] };
  }

  async sign(claims: SystemTokenClaims, now: Date, expiresAt: Date): Promise<string> {
    const body: Record<string, string> = { id: claims.organizationId, scope: claims.scope, sid: claims.sessionId };
    if (claims.teamId) body.team = claims.teamId;
    if (claims.timezone) body.timezone = claims.timezone;
    return new SignJWT(body)
      .setProtectedHeader({ alg: this.alg, kid: this.kid, typ: "JWT" })
      .setSubject(claims.userId)
      .setIssuedAt(Math.floor(now.getTime() / 1000))
      .setExpirationTime(Math.floor(expiresAt.getTime() / 1000))
      .sign(this.#private);
  }

  /** True when the token names this key: it is then verified here and nowhere else. */
  owns(token: string): boolean {
    try {
      return decodeProtectedHeader(token).kid === this.kid;
    } catch {
      return false;
    }
  }

  /** The verified payload, with `sid` required; throws jose's errors. */
  async verify(token: string, now: Date): Promise<JWTPayload> {
    const { payload } = await jwtVerify(token, this.#public, {
      algorithms: [this.alg],
      requiredClaims: ["exp", "sub", "sid"],
      currentDate: now,
    });
    return payload;
  }
}
