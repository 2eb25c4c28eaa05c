import { useSyncExternalStore } from "react";

/**
 * The signed-in credential (an access token or an API key). A pasted one or dev-login's is kept in
 * sessionStorage: it survives a reload of the tab but not the tab itself, and no other tab or site
 * sees it. A token of the identity provider's sign-in is kept in memory only: the session cookie
 * (HttpOnly, never readable here) mints a new one after a reload (docs/console.md "Signing in").
 */
const KEY = "fleet.console.token";
/** Set beside the token when dev-login made it: the switcher may ask dev-login for another organization. */
const DEV_LOGIN_KEY = "fleet.console.dev-login";
const listeners = new Set<() => void>();

interface SessionState {
  token: string | undefined;
  /** The token came from the sign-in session (`auth.token`), not from a paste or dev-login. */
  fromProvider?: boolean;
  /** The token came from dev-login (kept, like a pasted one, in sessionStorage). */
  fromDevLogin?: boolean;
  /** Why the user was sent back to sign-in, shown there. */
  notice: string | undefined;
}

let state: SessionState = {
  token: sessionStorage.getItem(KEY) ?? undefined,
  fromDevLogin: sessionStorage.getItem(DEV_LOGIN_KEY) === "1",
  notice: undefined,
};

const set = (next: SessionState) => {
  state = next;
  if (next.token && !next.fromProvider) sessionStorage.setItem(KEY, next.token);
  else sessionStorage.removeItem(KEY);
  if (next.token && next.fromDevLogin) sessionStorage.setItem(DEV_LOGIN_KEY, "1");
  else sessionStorage.removeItem(DEV_LOGIN_KEY);
  for (const listener of listeners) listener();
};

export const session = {
  token: (): string | undefined => state.token,
  signIn: (token: string) => set({ token, notice: undefined }),
  /** A token of dev-login (development): the switcher may ask dev-login for another organization. */
  signInFromDevLogin: (token: string) => set({ token, fromDevLogin: true, notice: undefined }),
  fromDevLogin: (): boolean => state.fromDevLogin === true,
  /** A token minted from the sign-in session: in memory only. */
  signInFromProvider: (token: string) => set({ token, fromProvider: true, notice: undefined }),
  fromProvider: (): boolean => state.fromProvider === true,
  signOut: () => set({ token: undefined, notice: undefined }),
  /** The server refused the credential (expired, revoked): back to sign-in, saying why. */
  expire: () => {
    if (state.token) set({ token: undefined, notice: "Your session has expired or was revoked. Sign in again." });
  },
  subscribe: (listener: () => void) => {
    listeners.add(listener);
    return () => listeners.delete(listener);
  },
};

export const useSession = (): SessionState => useSyncExternalStore(session.subscribe, () => state);
