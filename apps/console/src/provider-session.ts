import type { AppRouter } from "@fleet/api/client";
import type { TRPCClient } from "@trpc/client";
import { pageConfig } from "./page-config.ts";
import { session } from "./session.ts";
import { isUnauthorized } from "./trpc.ts";

/** A new token this long before the current one expires. */
const RENEW_BEFORE_MS = 60_000;
let renewal: ReturnType<typeof setTimeout> | undefined;

/**
 * The identity provider's sign-in, in the console (docs/console.md "Signing in"): the session
 * cookie buys short-lived tokens through `auth.token`; each is kept in memory and renewed before it
 * expires, for the organization it acts in.
 */
export const providerSession = {
  enabled: (): boolean => pageConfig.oidc !== null && pageConfig.oidc !== undefined,

  /** The provider's sign-in page, coming back to where the console is now. */
  start(): void {
    const here = `${window.location.pathname}${window.location.search}`;
    window.location.assign(`/v1/auth/oidc/start?return_to=${encodeURIComponent(here)}`);
  },

  /** A token of the session cookie, if there is a live session; false when there is none. */
  async resume(client: TRPCClient<AppRouter>, organizationId?: string): Promise<boolean> {
    try {
      const result = await client.auth.token.mutate(organizationId ? { organization_id: organizationId } : {});
      session.signInFromProvider(result.access_token);
      clearTimeout(renewal);
      renewal = setTimeout(
        () => void providerSession.resume(client, result.organization_id),
        Math.max(5_000, result.expires_in * 1000 - RENEW_BEFORE_MS),
      );
      return true;
    } catch (error) {
      if (session.fromProvider() && isUnauthorized(error)) session.expire();
      return false;
    }
  },

  async signOut(client: TRPCClient<AppRouter>): Promise<void> {
    clearTimeout(renewal);
    if (session.fromProvider()) await client.auth.logout.mutate({}).catch(() => undefined);
    session.signOut();
  },
};
