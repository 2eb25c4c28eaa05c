import path from "node:path";
import { envOptional, envPort, envString, envTunnelSshPort, type TEnv } from "@fleet/shared";

/**
 * Where the system is, from the same variables the system itself reads (docs/operations.md "Configuration"), so
 * `npm run simulate` finds an `npm start` that runs on other ports without extra flags.
 */
export interface SimulatorDefaults {
  heartbeatUrl: string;
  apiUrl: string;
  sshPort: number;
  sshUser: string | undefined;
  /** `DATA_DIR` as the system reads it (`./.data`); with `memory`, the default `./.data`. */
  dataDir: string;
}

export const loadSimulatorDefaults = (env: TEnv = process.env): SimulatorDefaults => {
  const host = envString(env, "HOST", "127.0.0.1");
  const reachable = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host;
  const hostPart = reachable.includes(":") ? `[${reachable}]` : reachable;
  const dataDir = envString(env, "DATA_DIR", "./.data");
  return {
    heartbeatUrl: `ws://${hostPart}:${envPort(env, "HEARTBEAT_PORT", 3001, false)}/v1/heartbeat`,
    apiUrl: `http://${hostPart}:${envPort(env, "PORT", 3000, false)}`,
    sshPort: envTunnelSshPort(env),
    sshUser: envOptional(env, "TUNNEL_SSH_USER"),
    dataDir: path.normalize(dataDir === "memory" ? "./.data" : dataDir),
  };
};
