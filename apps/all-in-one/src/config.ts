import { type ApiConfig, loadApiConfig } from "@fleet/api/config";
import { type HeartbeatConfig, loadHeartbeatConfig } from "@fleet/heartbeat-daemon";
import type { TEnv } from "@fleet/shared";
import { loadTunnelAgentConfig, type TunnelAgentConfig } from "@fleet/tunnel-agent";

/** The configuration of every app in the process, each parsed by its own app's loader. */
export interface AllInOneConfig {
  api: ApiConfig;
  heartbeat: HeartbeatConfig;
  tunnelAgent: TunnelAgentConfig;
}

/** `npm start`: every app's own loader, the same defaults as each app alone (docs/operations.md "Configuration"). */
export const loadAllInOneConfig = (env: TEnv = process.env): AllInOneConfig => ({
  api: loadApiConfig(env),
  heartbeat: loadHeartbeatConfig(env),
  tunnelAgent: loadTunnelAgentConfig(env),
});
