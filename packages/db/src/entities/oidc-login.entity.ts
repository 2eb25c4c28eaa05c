import { defineEntity, type InferEntity, p } from "@mikro-orm/core";

/**
 * A sign-in under way, from the redirect to the provider to its callback (docs/api.md "Sign-in"):
 * keyed by the hash of `state`, bound to the browser by the hash of a short-lived cookie, and
 * deleted when the callback takes it, so a state (and the code sent with it) works once.
 */
export const OidcLogin = defineEntity({
  name: "OidcLogin",
  tableName: "oidc_logins",
  properties: {
    stateHash: p.string().length(64).primary(),
    browserHash: p.string().length(64),
    codeVerifier: p.string().length(128),
    nonce: p.string().length(128),
    returnTo: p.string().length(2000),
    expiresAt: p.datetime().index(),
  },
});
export type TOidcLogin = InferEntity<typeof OidcLogin>;
