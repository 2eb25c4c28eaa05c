import { MutationCache, QueryCache, QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import { connection } from "./connection.ts";
import { Shell } from "./shell.tsx";
import { SignInPage } from "./pages/sign-in-page.tsx";
import { providerSession } from "./provider-session.ts";
import { session, useSession } from "./session.ts";
import { isConnectionError, isUnauthorized, makeClient, TRPCProvider } from "./trpc.ts";

const onError = (error: unknown) => {
  if (isUnauthorized(error)) session.expire();
  else if (isConnectionError(error)) connection.set(true);
};

const queryClient = new QueryClient({
  queryCache: new QueryCache({ onError, onSuccess: () => connection.set(false) }),
  mutationCache: new MutationCache({ onError, onSuccess: () => connection.set(false) }),
  defaultOptions: {
    queries: {
      staleTime: 5_000,
      // Only a lost connection is worth retrying; a refusal answers the same the second time.
      retry: (count, error) => isConnectionError(error) && count < 2,
    },
    mutations: { retry: false },
  },
});

export const App = () => {
  const { token } = useSession();
  const [client] = useState(makeClient);
  // Nothing cached for one credential is shown to the next.
  useEffect(() => {
    if (!token) queryClient.clear();
  }, [token]);
  // Signed in at the identity provider (a session cookie): a token of it, without asking anyone.
  const [resuming, setResuming] = useState(providerSession.enabled() && !token);
  useEffect(() => {
    if (!resuming) return;
    void providerSession.resume(client).finally(() => setResuming(false));
  }, [resuming, client]);
  return (
    <QueryClientProvider client={queryClient}>
      <TRPCProvider trpcClient={client} queryClient={queryClient}>
        {token ? <Shell /> : resuming ? null : <SignInPage />}
      </TRPCProvider>
    </QueryClientProvider>
  );
};
