import {
  type Database,
  AdoptionsRepository,
  AvailabilityRepository,
  acquireStatusFeed,
  ConfigBackupsRepository,
  HealthSeriesRepository,
  loadOemSnapshot,
  MaintenanceWindowsRepository,
  OemRepository,
  queryOf,
  queueBackupJob,
  RoutersRepository,
} from "@fleet/db";
import { dataDirSecret } from "@fleet/runtime";
import type { Logger } from "pino";
import type { ApiConfig } from "../config.ts";
import { AccessService } from "../features/access/access.service.ts";
import { AvailabilityService } from "../features/availability/availability.service.ts";
import { pruneDowntime } from "../features/availability/prune-downtime.job.ts";
import { offLoopPatch } from "../features/backups/config-diff.ts";
import { BackupsService } from "../features/backups/backups.service.ts";
import { ForwardsService } from "../features/forwards/forwards.service.ts";
import { type OemRefreshSchedule, scheduleOemRefresh, unscheduleOemRefresh } from "../features/oem/oem-refresh.job.ts";
import { OemService } from "../features/oem/oem.service.ts";
import { agentPublicKeySource } from "../features/routers/adoption/agent-public-key.ts";
import { AdoptionService } from "../features/routers/adoption/adoption.service.ts";
import { hubPublicKeySource } from "../features/routers/adoption/hub-public-key.ts";
import { RouterService } from "../features/routers/routers.service.ts";
import { RouterHealthService } from "../features/routers/router-health.service.ts";
import { maintainHealthPartitions } from "../features/routers/health-partitions.job.ts";
import type { SubscriptionService } from "../features/subscriptions/subscription.service.ts";
import type { Wired, WiringContext } from "./wiring.ts";

export interface RoutersServices {
  routers: RouterService;
  adoption: AdoptionService;
  oem: OemService;
  availability: AvailabilityService;
  forwards: ForwardsService;
  access: AccessService;
  backups: BackupsService;
  routerHealth: RouterHealthService;
}

/**
 * What the composition root knows better than the API's own configuration (docs/routeros.md
 * "Adoption"): where the heartbeat daemon really listens and the tunnel agent's public key.
 */
export interface AdoptionSources {
  heartbeatPublicUrl?: () => string;
  agentPublicKey?: () => string | undefined;
  /** The WireGuard hub's public key (TUNNEL_MODE=wireguard), from the tunnel agent in the same process. */
  hubPublicKey?: () => string | undefined;
}

export interface RoutersWiringOptions {
  /** Enrolling is creating a service: subscription check before, quantity sync after. */
  clearance: SubscriptionService;
  adoptionSources?: AdoptionSources | undefined;
  /** The API's own URL, known once the server is bound (PORT=0 picks a free port). */
  apiUrl: () => string;
  /** ACCESS_PASSWORD_KEY when the composition root shares one with the tunnel agent (DATA_DIR=memory). */
  accessPasswordKey?: string | undefined;
}

/**
 * Routers and what hangs off them: adoption, the OEM catalogue, availability, transient forwards,
 * temporary access and configuration backups (docs/api.md "Routers and heartbeats").
 */
export const wireRouters = async (
  { config, db, logger, jobs, clock }: WiringContext,
  options: RoutersWiringOptions,
): Promise<Wired<RoutersServices>> => {
  const statusFeed = await acquireStatusFeed(db, (error) => logger.warn({ err: error }, "status feed connection lost"));
  const oemCatalog = new OemRepository(queryOf(db));
  const availability = new AvailabilityRepository(queryOf(db));
  const hostForUrl = config.host === "0.0.0.0" || config.host === "::" ? "127.0.0.1" : config.host;
  const { adoption: adoptionConfig } = config;
  const defaultHeartbeatUrl = `http://${hostForUrl.includes(":") ? `[${hostForUrl}]` : hostForUrl}:${adoptionConfig.heartbeatPort}`;
  const sources = options.adoptionSources;
  const adoption = new AdoptionService({
    store: new AdoptionsRepository(queryOf(db)),
    db,
    clock,
    logger: logger.child({ feature: "adoption" }),
    feed: statusFeed.feed,
    apiPublicUrl: () => adoptionConfig.apiPublicUrl ?? options.apiUrl(),
    heartbeatPublicUrl: () =>
      adoptionConfig.heartbeatPublicUrl ?? sources?.heartbeatPublicUrl?.() ?? defaultHeartbeatUrl,
    agentPublicKey: sources?.agentPublicKey ?? agentPublicKeySource(adoptionConfig, config.dataDir),
    intervalMs: adoptionConfig.intervalMs,
    sshUser: adoptionConfig.sshUser,
    tunnelNetwork: adoptionConfig.tunnelNetwork,
    pingTarget: adoptionConfig.pingTarget,
    ...wireguardAdoption(config, sources?.hubPublicKey),
  });
  const healthSeries = new HealthSeriesRepository(db);
  const services: RoutersServices = {
    routers: new RouterService({
      routers: new RoutersRepository(db),
      db,
      jobs,
      quarantineDays: config.tunnelAddressQuarantineDays,
      clearance: options.clearance,
      feed: statusFeed.feed,
      clock,
      logger: logger.child({ feature: "routers" }),
      oem: oemCatalog,
      adoption,
      tunnelNetwork: config.tunnelNetwork,
      tunnelMode: config.adoption.tunnel.mode,
      maintenanceWindows: (organizationId) => new MaintenanceWindowsRepository(queryOf(db)).listFor([organizationId]),
    }),
    adoption,
    routerHealth: new RouterHealthService({
      series: healthSeries,
      routers: new RoutersRepository(db),
      clock,
    }),
    oem: new OemService({ catalog: oemCatalog }),
    availability: new AvailabilityService({
      availability,
      routers: new RoutersRepository(db),
      clock,
      maintenanceWindows: (organizationId) => new MaintenanceWindowsRepository(queryOf(db)).listFor([organizationId]),
    }),
    forwards: new ForwardsService({
      db,
      jobs,
      clock,
      entryPoint: config.entryPoint,
      maxActivePerOrg: config.forwardsPerOrg,
      trialForwards: config.trialForwards,
      tunnelNetwork: config.tunnelNetwork,
      loopbackSources: config.development,
    }),
    access: new AccessService({
      db,
      jobs,
      clock,
      entryPoint: config.entryPoint,
      maxActivePerOrg: config.forwardsPerOrg,
      trialForwards: config.trialForwards,
      tunnelNetwork: config.tunnelNetwork,
      passwordKey:
        config.events.accessPasswordKey ?? options.accessPasswordKey ?? dataDirSecret(config.dataDir, "accessPassword"),
    }),
    backups: new BackupsService({
      backups: new ConfigBackupsRepository(queryOf(db)),
      routers: new RoutersRepository(db),
      queue: (routerId) => queueBackupJob(jobs, db, routerId),
      patch: offLoopPatch(),
    }),
  };
  await installOemSnapshot(db, clock.now(), logger);
  let oemRefresh: OemRefreshSchedule | undefined;
  if (config.oem.catalogUrl) {
    oemRefresh = await scheduleOemRefresh(jobs, {
      url: config.oem.catalogUrl,
      cron: config.oem.refreshCron,
      db,
      logger: logger.child({ job: "oem-refresh" }),
      clock,
    });
  } else {
    await unscheduleOemRefresh(jobs);
  }
  return {
    services,
    // docs/api.md "Availability": METRICS_RETENTION_DAYS of hourly downtime, pruned hourly.
    schedules: [
      // PGlite has no autovacuum: the fleet list's statistics refreshed as it would (docs/api.md "Listing
      // a fleet"). They persist in DATA_DIR, so a restart keeps them; the first pass comes within 10 minutes.
      ...(db.driver === "pglite"
        ? [
            {
              queue: "routers.statistics",
              cron: "*/10 * * * *",
              run: () => new RoutersRepository(db).refreshPlannerStatistics(),
            },
          ]
        : []),
      {
        queue: "downtime.prune",
        cron: "37 * * * *",
        run: () =>
          pruneDowntime({
            downtime: availability,
            clock,
            retentionDays: config.events.metricsRetentionDays,
            logger: logger.child({ job: "downtime-prune" }),
          }),
      },
      // docs/scale.md "Health samples": partitions made ahead and dropped past their retention.
      {
        queue: "health.partitions",
        cron: "41 * * * *",
        run: () =>
          maintainHealthPartitions({
            series: healthSeries,
            query: queryOf(db),
            db,
            clock,
            resourceRetentionDays: config.events.resourceRetentionDays,
            metricsRetentionDays: config.events.metricsRetentionDays,
            logger: logger.child({ job: "health-partitions" }),
          }),
      },
    ],
    close: async () => {
      await oemRefresh?.stop();
      await statusFeed.release();
    },
  };
};

/**
 * A database seeded by an older release gets the shipped catalogue; refreshed data is kept. Never
 * fatal: instances starting together may race here, and the data already there is still good.
 */
const installOemSnapshot = async (db: Pick<Database, "transaction">, now: Date, logger: Logger) => {
  try {
    const installed = await db.transaction((query) => new OemRepository(query).installSnapshot(loadOemSnapshot(), now));
    if (installed) logger.info("installed the shipped OEM catalogue");
  } catch (error) {
    logger.warn({ err: error }, "could not install the shipped OEM catalogue; keeping the stored one");
  }
};

/** TUNNEL_MODE=wireguard: the adoption script's tunnel part (docs/routeros.md "The management tunnel"). */
const wireguardAdoption = (
  config: ApiConfig,
  hubPublicKey: (() => string | undefined) | undefined,
): { wireguard?: ConstructorParameters<typeof AdoptionService>[0]["wireguard"] } => {
  const tunnel = config.adoption.tunnel;
  if (tunnel.mode !== "wireguard") return {};
  return {
    wireguard: {
      hubPublicKey: hubPublicKey ?? hubPublicKeySource(tunnel, config.dataDir),
      endpointHost: tunnel.endpoint.host,
      endpointPort: tunnel.endpoint.port,
      hubAddress: tunnel.hubAddress,
      // What the agent (SSH) and temporary access (WinBox 8291, WebFig 80) reach on the router itself.
      servicePorts: [...new Set([config.adoption.sshPort, 8291, 80])],
    },
  };
};
