import { parseArgs } from "node:util";
import { startTestIdp } from "./test-idp.ts";

/**
 * `npm run idp`: a development OpenID Connect provider on loopback (any login and password sign
 * in), for trying sign-in locally (docs/operations.md "Sign-in providers"). Prints what to set.
 */
const { values } = parseArgs({
  options: {
    port: { type: "string", default: "4400" },
    api: { type: "string", default: "http://127.0.0.1:3000" },
  },
});
const apis = [values.api, values.api.replace("127.0.0.1", "localhost")];
const idp = await startTestIdp({
  port: Number(values.port),
  redirectUris: [...new Set(apis)].map((api) => `${api.replace(/\/+$/, "")}/v1/auth/oidc/callback`),
});
const env = { ...idp.env(), OIDC_DISPLAY_NAME: "Development IdP", API_PUBLIC_URL: values.api };
process.stdout.write(
  `Development identity provider at ${idp.issuer} (any login and password sign in; <login>@example.test, verified).\nStart the system with:\n\n${Object.entries(
    env,
  )
    .map(([name, value]) => `export ${name}='${value}'`)
    .join("\n")}\n\nCtrl-C stops it.\n`,
);
const stop = () => {
  void idp.close().then(() => process.exit(0));
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
