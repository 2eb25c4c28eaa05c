export { DataDirLockedError, lockDataDir } from "./data-dir-lock.ts";
export { DATA_DIR_SECRETS, dataDirSecret } from "./data-dir-secret.ts";
export { type MetricsAnswer, renderMetrics } from "./metrics/metrics-endpoint.ts";
export {
  type RunningMetricsServer,
  startConfiguredMetricsServer,
  startMetricsServer,
} from "./metrics/metrics-server.ts";
export * from "./telemetry/tracing.ts";
