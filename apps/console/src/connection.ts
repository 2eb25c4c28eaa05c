import { useSyncExternalStore } from "react";

/**
 * Whether the server is reachable, as the console last saw it: a call that got no answer, or the
 * status stream reconnecting, marks it lost; the next answer marks it back.
 */
let lost = false;
const listeners = new Set<() => void>();

export const connection = {
  set(next: boolean) {
    if (lost === next) return;
    lost = next;
    for (const listener of listeners) listener();
  },
  subscribe(listener: () => void) {
    listeners.add(listener);
    return () => listeners.delete(listener);
  },
};

export const useConnectionLost = (): boolean => useSyncExternalStore(connection.subscribe, () => lost);
