import { useMutation } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { Field, FormError } from "../components/field.tsx";
import { usePageTitle } from "../components/hooks.ts";
import { pageConfig } from "../page-config.ts";
import { providerSession } from "../provider-session.ts";
import { session, useSession } from "../session.ts";
import { fieldErrors, messageOf, useTRPC } from "../trpc.ts";

/**
 * docs/console.md "Signing in": the identity provider's button when sign-in is configured, dev-login
 * where the deployment has it on; everywhere, a pasted access token or an API key.
 */
export const SignInPage = () => {
  usePageTitle("Sign in");
  const trpc = useTRPC();
  const { notice } = useSession();
  const [email, setEmail] = useState("");
  const [token, setToken] = useState("");
  const devLogin = useMutation(
    trpc.auth.devLogin.mutationOptions({ onSuccess: (result) => session.signInFromDevLogin(result.access_token) }),
  );
  const signInWithEmail = (event: FormEvent) => {
    event.preventDefault();
    devLogin.mutate({ email });
  };
  const useToken = (event: FormEvent) => {
    event.preventDefault();
    const value = token.trim().replace(/^Bearer\s+/i, "");
    if (value) session.signIn(value);
  };
  const errors = fieldErrors(devLogin.error);
  return (
    <main id="main" className="sign-in">
      <h1>Fleet console</h1>
      {notice ? (
        <p role="alert" className="banner">
          {notice}
        </p>
      ) : null}
      {pageConfig.oidc ? (
        <section aria-labelledby="provider-title" className="card">
          <h2 id="provider-title">Sign in</h2>
          <button type="button" onClick={() => providerSession.start()}>
            Sign in with {pageConfig.oidc.displayName}
          </button>
        </section>
      ) : null}
      {pageConfig.devLogin ? (
        <form onSubmit={signInWithEmail} aria-labelledby="dev-login-title" className="card">
          <h2 id="dev-login-title">Development sign-in</h2>
          <p className="hint">This deployment has dev-login on: any email gets a token (never in production).</p>
          <Field
            label="Email"
            type="email"
            name="email"
            autoComplete="email"
            required
            value={email}
            onChange={(e) => setEmail(e.target.value)}
            errors={errors.email}
          />
          <FormError message={devLogin.error && !errors.email ? messageOf(devLogin.error) : undefined} />
          <button type="submit" disabled={devLogin.isPending}>
            Sign in with email
          </button>
        </form>
      ) : null}
      <form onSubmit={useToken} aria-labelledby="token-title" className="card">
        <h2 id="token-title">Sign in with a token</h2>
        <div className="field">
          <label htmlFor="token">Access token or API key</label>
          <textarea
            id="token"
            name="token"
            rows={3}
            spellCheck={false}
            autoComplete="off"
            value={token}
            onChange={(e) => setToken(e.target.value)}
          />
          <span className="hint">Kept in this browser tab only; signing out forgets it.</span>
        </div>
        <button type="submit">Use token</button>
      </form>
    </main>
  );
};
