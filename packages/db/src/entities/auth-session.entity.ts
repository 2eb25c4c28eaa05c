import { defineEntity, type InferEntity, p } from "@mikro-orm/core";
import { User } from "./user.entity.ts";

/**
 * A sign-in session (docs/api.md "Sign-in"): the `fleet_session` cookie's value is stored only as
 * its SHA-256; the id is the `sid` claim of the tokens minted from it. Ended by logout (`endedAt`)
 * or by time (`expiresAt`, SESSION_TTL_HOURS after sign-in, never extended).
 */
export const AuthSession = defineEntity({
  name: "AuthSession",
  tableName: "auth_sessions",
  properties: {
    id: p.uuid().primary(),
    tokenHash: p.string().length(64).unique(),
    user: () => p.manyToOne(User).deleteRule("cascade").index(),
    /** The provider's `zoneinfo`, when it is a known IANA zone. */
    timezone: p.string().length(64).nullable(),
    createdAt: p.datetime(),
    expiresAt: p.datetime(),
    endedAt: p.datetime().nullable(),
  },
});
export type TAuthSession = InferEntity<typeof AuthSession>;
