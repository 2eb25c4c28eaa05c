import { useQueryClient } from "@tanstack/react-query";
import { useSubscription } from "@trpc/tanstack-react-query";
import { useEffect, useRef } from "react";
import { connection } from "./connection.ts";
import { session } from "./session.ts";
import { isUnauthorized, useTRPC } from "./trpc.ts";

/**
 * `routers.onStatus` for the whole signed-in session (docs/console.md "Live state"): a pulse flip
 * is written into the cached router at once and refetches the fleet's lists and counts, fault and removal events refetch what they
 * change, and after a reconnect every view refetches, so nothing missed while away stays stale.
 */
export const useLiveStatus = () => {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const subscription = useSubscription(
    trpc.routers.onStatus.subscriptionOptions(undefined, {
      onData: (event) => {
        if (event.type === "pulse") {
          // The router page's router flips at once; lists and counts (paged, filtered: the flip may
          // move a router between pages) and last_seen come with the next read.
          queryClient.setQueryData(trpc.routers.get.queryKey({ router_id: event.router_id }), (answer) =>
            answer ? { ...answer, data: { ...answer.data, has_pulse: event.has_pulse } } : answer,
          );
          void queryClient.invalidateQueries({ queryKey: trpc.routers.list.pathKey() });
          void queryClient.invalidateQueries({ queryKey: trpc.routers.counts.queryKey() });
          void queryClient.invalidateQueries({ queryKey: trpc.routers.get.queryKey({ router_id: event.router_id }) });
          void queryClient.invalidateQueries({
            queryKey: trpc.routers.faults.queryKey({ router_id: event.router_id }),
          });
        } else if (event.type === "fault") {
          void queryClient.invalidateQueries({
            queryKey: trpc.routers.faults.queryKey({ router_id: event.router_id }),
          });
          void queryClient.invalidateQueries({
            queryKey: trpc.routers.metrics.queryKey({ router_id: event.router_id }),
          });
        } else {
          void queryClient.invalidateQueries({ queryKey: trpc.routers.list.pathKey() });
          void queryClient.invalidateQueries({ queryKey: trpc.routers.counts.queryKey() });
        }
      },
      onError: (error) => {
        if (isUnauthorized(error)) session.expire();
      },
    }),
  );

  const wasConnected = useRef(false);
  useEffect(() => {
    if (subscription.status === "pending") {
      // (Re)connected: catch up on everything that may have changed meanwhile.
      if (wasConnected.current) void queryClient.invalidateQueries();
      wasConnected.current = true;
      connection.set(false);
    } else if (subscription.status === "connecting" && wasConnected.current) {
      connection.set(true);
    }
  }, [subscription.status, queryClient]);
  return subscription.status;
};
