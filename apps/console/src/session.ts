import { useSyncExternalStore } from "react";

/**
 * The signed-in credential (an access token or an API key). Kept in sessionStorage: it survives a
 * reload of the tab but not the tab itself, and no other tab or site sees it.
 */
const KEY = "fleet.console.token";
const listeners = new Set<() => void>();

interface SessionState {
  token: string | undefined;
  /** Why the user was sent back to sign-in, shown there. */
  notice: string | undefined;
}

let state: SessionState = { token: sessionStorage.getItem(KEY) ?? undefined, notice: undefined };

const set = (next: SessionState) => {
  state = next;
  if (next.token) sessionStorage.setItem(KEY, next.token);
  else sessionStorage.removeItem(KEY);
  for (const listener of listeners) listener();
};

export const session = {
  token: (): string | undefined => state.token,
  signIn: (token: string) => set({ token, notice: undefined }),
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
