import { useSyncExternalStore } from "react";

/**
 * Whether the server is reachable, as the console last saw it: a call that got no answer, the
 * status stream reconnecting or the browser going offline marks it lost; the next answer while the
 * browser is online marks it back.
 */
let lost = false;
const listeners = new Set<() => void>();

export const connection = {
  set(next: boolean) {
    // While the browser reports no network, an answer to a call made before it went (a late one)
    // does not mark the server back: the banner stays until the network does.
    const value = next || (typeof navigator !== "undefined" && navigator.onLine === false);
    if (lost === value) return;
    lost = value;
    for (const listener of listeners) listener();
  },
  subscribe(listener: () => void) {
    listeners.add(listener);
    return () => listeners.delete(listener);
  },
};

export const useConnectionLost = (): boolean => useSyncExternalStore(connection.subscribe, () => lost);
