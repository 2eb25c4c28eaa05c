import { type ApiConfig, loadApiConfig } from "@fleet/api/config";
import type { TEnv } from "@fleet/shared";

/** The configuration of every app in the process, each parsed by its own app's loader. */
export interface AllInOneConfig {
  api: ApiConfig;
}

/** `npm start`: dev login defaults to on (CONTRACT section 2). */
export const loadAllInOneConfig = (env: TEnv = process.env): AllInOneConfig => ({
  api: loadApiConfig(env, { devLogin: true }),
});
