import { timingSafeEqual } from "node:crypto";
import type { IdentityWorkflow } from "@fleet/db";
import {
  ALL_SCOPES,
  AppError,
  bearerToken,
  isKnownTimeZone,
  type TDevLoginInput,
  type TLoginHookResult,
  type TLoginResult,
} from "@fleet/shared";
import type { TokenSigner } from "./token-verifier.ts";

export interface AuthServiceDeps {
  identity: IdentityWorkflow;
  /** Present only when dev login is on (HS256 mode with AUTH_DEV_LOGIN). */
  signer: TokenSigner | undefined;
  loginHookSecret: string | undefined;
}

/** The authentication workflow of docs/api.md ("Initial state and workflow rules" 1-2). */
export class AuthService {
  readonly #deps: AuthServiceDeps;
  constructor(deps: AuthServiceDeps) {
    this.#deps = deps;
  }

  /** POST /v1/auth/login-hook is on (AUTH_LOGIN_HOOK_SECRET is set). */
  get loginHookEnabled(): boolean {
    return this.#deps.loginHookSecret !== undefined;
  }

  get devLoginEnabled(): boolean {
    return this.#deps.signer !== undefined;
  }

  async devLogin(input: TDevLoginInput): Promise<TLoginResult> {
    const signer = this.#deps.signer;
    if (!signer) throw new AppError("not_found", "Not found.");
    const scopes = (input.scope ?? ALL_SCOPES.join(" ")).split(/\s+/).filter(Boolean);
    const unknown = scopes.filter((s) => !(ALL_SCOPES as readonly string[]).includes(s));
    if (unknown.length > 0) {
      throw new AppError("validation_failed", `Unknown scope: ${unknown.join(", ")}.`, {
        fields: { scope: [`unknown scope(s): ${unknown.join(", ")}; known: ${ALL_SCOPES.join(" ")}`] },
      });
    }
    if (input.timezone !== undefined && !isKnownTimeZone(input.timezone)) {
      throw new AppError("validation_failed", "Unknown time zone.", {
        fields: { timezone: ["must be an IANA time zone name such as Europe/Berlin"] },
      });
    }
    let identity = await this.#deps.identity.loginByEmail(input.email);
    if (input.organization_id !== undefined) {
      // The console's switcher in development: another organization the user acts in (as auth.token).
      const chosen = await this.#deps.identity.chooseOrganization(identity.userId, input.organization_id);
      if (!chosen) throw new AppError("not_found", "No such organization.");
      identity = { ...identity, ...chosen };
    }
    const token = await signer.sign({
      userId: identity.userId,
      organizationId: identity.organizationId,
      scope: scopes.join(" "),
      timezone: input.timezone,
    });
    return {
      access_token: token,
      token_type: "Bearer",
      expires_in: signer.ttlSeconds,
      user_id: identity.userId,
      organization_id: identity.organizationId,
      team_id: identity.teamId,
    };
  }

  /** The login hook's caller check: 404 while the hook is off, 401 without the shared secret. */
  assertLoginHookCaller(authorization: string | undefined): void {
    const secret = this.#deps.loginHookSecret;
    if (!secret) throw new AppError("not_found", "Not found.");
    const presented = Buffer.from(bearerToken(authorization) ?? "");
    const expected = Buffer.from(secret);
    if (presented.length !== expected.length || !timingSafeEqual(presented, expected)) {
      throw new AppError("unauthenticated", "The login hook secret is missing or wrong.");
    }
  }

  /** Called by a production identity provider at login; answers the ids to put in the claims. */
  async loginHook(authorization: string | undefined, email: string): Promise<TLoginHookResult> {
    this.assertLoginHookCaller(authorization);
    const identity = await this.#deps.identity.loginByEmail(email);
    return { user_id: identity.userId, organization_id: identity.organizationId, team_id: identity.teamId };
  }
}
