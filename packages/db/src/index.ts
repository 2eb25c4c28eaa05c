export * from "./database.ts";
export * from "./entities/index.ts";
export * from "./repositories/accounts.repository.ts";
export * from "./repositories/identity.repository.ts";
export * from "./repositories/subscriptions.repository.ts";
export * from "./repositories/billing-mirror.repository.ts";
export * from "./repositories/oem.repository.ts";
export { loadOemSnapshot, oemMatchKeys, snapshotSource } from "./oem/oem-snapshot.ts";
export * from "./repositories/forwards.repository.ts";
export * from "./repositories/forward-targets.repository.ts";
export * from "./repositories/fleet-status.repository.ts";
export * from "./repositories/entry-point-ports.ts";
export { organizationsOfRouters } from "./repositories/entry-point-sessions.ts";
export * from "./repositories/session-counts.repository.ts";
export * from "./jobs/forward-jobs.ts";
export * from "./jobs/access-jobs.ts";
export * from "./jobs/session-jobs.ts";
export * from "./jobs/webhook-jobs.ts";
export * from "./repositories/ssh-host-keys.repository.ts";
export * from "./repositories/tunnel-addresses.repository.ts";
export * from "./repositories/rate-limit-counters.repository.ts";
export * from "./repositories/routers.repository.ts";
export * from "./repositories/adoptions.repository.ts";
export * from "./repositories/heartbeats.repository.ts";
export { acquireStatusFeed, packEvents, STATUS_CHANNEL, type StatusFeedHandle } from "./status-feed.ts";
export { isUniqueViolation } from "./repositories/sql-values.ts";
export * from "./jobs/job-engine.ts";
export * from "./jobs/router-jobs.ts";
export * from "./jobs/router-job-locks.ts";
export * from "./jobs/scheduled-task.ts";
export { type MetricsAnswer, renderMetrics } from "./metrics/metrics-endpoint.ts";
export { clusterGauge, holdClusterLease, LEASE_SECONDS } from "./metrics/cluster-metrics.ts";
export {
  type RunningMetricsServer,
  startConfiguredMetricsServer,
  startMetricsServer,
} from "./metrics/metrics-server.ts";
export * from "./repositories/audit-log.repository.ts";
export * from "./repositories/api-keys.repository.ts";
export * from "./repositories/webhooks.repository.ts";
export { DataDirLockedError } from "./data-dir-lock.ts";
export { DATA_DIR_SECRETS, dataDirSecret } from "./data-dir-secret.ts";
export * from "./repositories/availability.repository.ts";
export * from "./repositories/config-backups.repository.ts";
export * from "./repositories/access.repository.ts";
export * from "./telemetry/tracing.ts";
export * from "./repositories/wireguard-peers.repository.ts";
export * from "./repositories/sign-in.repository.ts";
export * from "./repositories/memberships-lookup.repository.ts";
