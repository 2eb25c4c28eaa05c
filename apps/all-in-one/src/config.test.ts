import { describe, expect, it } from "vitest";
import { loadAllInOneConfig } from "./config.ts";

// docs/operations.md "Configuration": `npm start` keeps the API's own dev-login default, so a
// configured token key or NODE_ENV=production turns dev login off here too.
describe("npm start configuration", () => {
  const SECRET = "s".repeat(32);
  it.each([
    [{}, true],
    [{ NODE_ENV: "production" }, false],
    [{ JWT_SECRET: SECRET }, false],
    [{ JWT_SECRET: SECRET, NODE_ENV: "production" }, false],
    [{ JWT_JWKS_URL: "https://idp.example/jwks" }, false],
    [{ AUTH_DEV_LOGIN: "true", JWT_SECRET: SECRET, NODE_ENV: "production" }, true],
  ])("dev login with %o: %s", (env, on) => {
    expect(loadAllInOneConfig(env).api.auth.devLogin).toBe(on);
  });
});
