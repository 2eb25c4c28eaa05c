/** What the API tells the page at load (docs/console.md "Served by the API"). */
export interface PageConfig {
  /** dev-login is on: the sign-in page offers it. */
  devLogin: boolean;
  /** Sign-in through the identity provider is on: its button, with this name. */
  oidc?: { displayName: string } | null;
  /** Real Stripe (Stripe.js) or the built-in emulator's client-side endpoints under `path`. */
  processor: { kind: "stripe" } | { kind: "emulator"; path: string };
}

const FALLBACK: PageConfig = { devLogin: false, processor: { kind: "stripe" } };

const read = (): PageConfig => {
  const text = document.getElementById("console-config")?.textContent;
  if (!text) return FALLBACK;
  try {
    return { ...FALLBACK, ...(JSON.parse(text) as Partial<PageConfig>) };
  } catch {
    return FALLBACK;
  }
};

export const pageConfig: PageConfig = read();
