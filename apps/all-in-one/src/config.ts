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

/** What the admin CLI needs (docs/operations.md "Admin CLI"): the database and the heartbeat period. */
export interface AdminConfig {
  databaseUrl: string | undefined;
  dataDir: string;
  heartbeatIntervalMs: number;
}

/**
 * The admin CLI's configuration: only the database and the heartbeat period, so `migrate` runs in
 * production where no app's secrets are given (the Kubernetes init container, compose's `migrate`),
 * which the apps' production checks would otherwise refuse.
 */
export const loadAdminConfig = (env: TEnv = process.env): AdminConfig => {
  const heartbeat = loadHeartbeatConfig(env, { serving: false });
  return { databaseUrl: heartbeat.databaseUrl, dataDir: heartbeat.dataDir, heartbeatIntervalMs: heartbeat.intervalMs };
};
