import { envOptional, envPort, envString, type TEnv } from "@fleet/shared";

/**
 * Where the system is, from the same variables the system itself reads (docs/operations.md "Configuration"), so
 * `npm run simulate` finds an `npm start` that runs on other ports without extra flags.
 */
export interface SimulatorDefaults {
  heartbeatUrl: string;
  apiUrl: string;
  sshPort: number;
  sshUser: string | undefined;
}

export const loadSimulatorDefaults = (env: TEnv = process.env): SimulatorDefaults => {
  const host = envString(env, "HOST", "127.0.0.1");
  const reachable = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host;
  const hostPart = reachable.includes(":") ? `[${reachable}]` : reachable;
  return {
    heartbeatUrl: `ws://${hostPart}:${envPort(env, "HEARTBEAT_PORT", 3001, false)}/v1/heartbeat`,
    apiUrl: `http://${hostPart}:${envPort(env, "PORT", 3000, false)}`,
    sshPort: envPort(env, "TUNNEL_SSH_PORT", 22, false),
    sshUser: envOptional(env, "TUNNEL_SSH_USER"),
  };
};
