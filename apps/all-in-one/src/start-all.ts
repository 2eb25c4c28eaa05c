import { randomBytes } from "node:crypto";
import { composeApi, type RunningApi } from "@fleet/api";
import { type Database, openDatabase } from "@fleet/db";
import { type RunningHeartbeat, startHeartbeat } from "@fleet/heartbeat-daemon";
import type { Clock } from "@fleet/shared";
import { type RunningTunnelAgent, type StartTunnelAgentOptions, startTunnelAgent } from "@fleet/tunnel-agent";
import type { Logger } from "pino";
import type { AllInOneConfig } from "./config.ts";

// The package exports this module only: tests and tools load the configuration through it.
export { type AllInOneConfig, loadAdminConfig, loadAllInOneConfig } from "./config.ts";

export interface RunningSystem<Agent extends RunningTunnelAgent = RunningTunnelAgent> {
  db: Database;
  api: RunningApi;
  heartbeat: RunningHeartbeat;
  tunnelAgent: Agent;
  /** Stops the apps in reverse order of start, then closes the database. */
  close(): Promise<void>;
}

export interface StartAllOptions {
  config: AllInOneConfig;
  logger: Logger;
}

/** What only tests change (`testing/system-builder.ts`). */
export interface SystemOverrides<Agent extends RunningTunnelAgent> {
  /** An already opened database; otherwise one is opened from the configuration. */
  db?: Database;
  /** Time of domain rules (forward expiry) for the API, the daemon and the tunnel agent. */
  clock?: Clock;
  /** Starts the tunnel agent (a test's builder, with the controls it drives). */
  startAgent: (options: StartTunnelAgentOptions, clock: Clock | undefined) => Promise<Agent>;
}

/**
 * The composition root: ONE database (PGlite is in-process and single-connection) shared by the
 * API, the heartbeat daemon and the tunnel agent, each started through its own start function.
 */
export const startAll = (options: StartAllOptions): Promise<RunningSystem> =>
  composeSystem(options, { startAgent: (agentOptions) => startTunnelAgent(agentOptions) });

/** {@link startAll} with what only tests change. */
export const composeSystem = async <Agent extends RunningTunnelAgent>(
  { config, logger }: StartAllOptions,
  { db: given, clock, startAgent }: SystemOverrides<Agent>,
): Promise<RunningSystem<Agent>> => {
  const db =
    given ??
    (await openDatabase({
      databaseUrl: config.api.databaseUrl,
      dataDir: config.api.dataDir,
      poolSize: config.api.databasePoolMax,
    }));
  await db.migrate();
  const stops: Array<() => Promise<void>> = [];
  // The API starts first; adoption scripts read where the daemon listens and the agent's key once
  // those are running (docs/routeros.md "Adoption").
  let heartbeatUrl: string | undefined;
  let agentPublicKey: string | undefined;
  // Temporary router users' passwords: the API shows what the agent sets; with DATA_DIR=memory no
  // file can carry the key between them, so it is made here once (docs/operations.md "Configuration").
  const accessPasswordKey = config.api.dataDir === "memory" ? randomBytes(48).toString("base64url") : undefined;
  let hubPublicKey: string | undefined;
  try {
    const api = await composeApi(
      {
        config: config.api,
        db,
        logger: logger.child({ app: "api" }),
        ...(accessPasswordKey ? { accessPasswordKey } : {}),
        adoption: {
          heartbeatPublicUrl: () => heartbeatUrl ?? `http://${config.heartbeat.host}:${config.heartbeat.port}`,
          agentPublicKey: () => agentPublicKey,
          hubPublicKey: () => hubPublicKey,
        },
      },
      clock ? { clock } : {},
    );
    stops.push(api.close);
    const heartbeat = await startHeartbeat({
      config: config.heartbeat,
      db,
      logger: logger.child({ app: "heartbeat" }),
      ...(clock ? { clock } : {}),
    });
    stops.push(heartbeat.close);
    heartbeatUrl = heartbeat.url;
    const tunnelAgent = await startAgent(
      {
        config: config.tunnelAgent,
        db,
        logger: logger.child({ app: "tunnel-agent" }),
        ...(accessPasswordKey ? { accessPasswordKey } : {}),
      },
      clock,
    );
    stops.push(tunnelAgent.close);
    agentPublicKey = tunnelAgent.publicKey;
    hubPublicKey = tunnelAgent.hub?.publicKey;
    return {
      db,
      api,
      heartbeat,
      tunnelAgent,
      close: async () => {
        for (const stop of stops.reverse()) await stop();
        if (!given) await db.close();
      },
    };
  } catch (error) {
    for (const stop of stops.reverse()) await stop().catch(() => {});
    if (!given) await db.close();
    throw error;
  }
};
