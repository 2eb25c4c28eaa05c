import { mintApiKey, storeApiKey } from "@fleet/api";
import {
  acquireJobEngine,
  API_KEYS_PER_ORGANIZATION,
  type Database,
  FleetStatusRepository,
  findJob,
  IdentityWorkflow,
  type JobEngine,
  listFailedJobs,
  queueRouterJob,
  ROUTER_JOBS_DEAD_LETTER,
  type RouterJobData,
  SYSTEM_ORIGIN,
  TunnelAddressesRepository,
} from "@fleet/db";
import { ALL_SCOPES, breaksTextRule, isUuid, PLATFORM_SCOPES } from "@fleet/shared";

/** What a command prints: lines for people, or one JSON document with `--json`. */
export type AdminOutput = { text: string[]; json: unknown };

export interface AdminContext {
  db: Database;
  /** Milliseconds between expected heartbeats (HEARTBEAT_INTERVAL_MS). */
  heartbeatIntervalMs: number;
}

const withEngine = async <T>(db: Database, work: (engine: JobEngine) => Promise<T>): Promise<T> => {
  // No cron evaluation and no maintenance from a short-lived CLI process.
  const engine = await acquireJobEngine(db, { schedule: false, supervise: false, instanceName: "admin-cli" });
  try {
    return await work(engine);
  } finally {
    await engine.stop();
  }
};

/** `migrate`: the application's migrations, then pg-boss's schema (it migrates itself on start). */
export const migrateCommand = async ({ db }: AdminContext): Promise<AdminOutput> => {
  await db.migrate();
  const version = await withEngine(db, (engine) => engine.boss.schemaVersion());
  return {
    text: ["migrations applied", `job engine schema version ${version}`],
    json: { migrated: true, jobSchemaVersion: version },
  };
};

/** `status`: migrations, processes seen, queue depths, connected routers, open faults. */
export const statusCommand = async ({ db, heartbeatIntervalMs }: AdminContext): Promise<AdminOutput> => {
  const ready = await db.isReady();
  const { instances, queues } = await withEngine(db, async (engine) => ({
    instances: await engine.boss.getInstances(),
    queues: await engine.boss.getQueues(),
  }));
  const since = new Date(Date.now() - 2 * heartbeatIntervalMs);
  const status = new FleetStatusRepository(db);
  const routers = await status.routerCounts(since);
  const openFaults = await status.openFaults();
  const connections = await status.connectionsByApplication();
  const json = {
    migrations: ready ? "applied" : "pending",
    // Live processes other than this CLI (pg-boss marks a row quiet after missed heartbeats).
    processes: instances
      .filter((i) => i.live && i.stoppedOn === null && i.name !== "admin-cli")
      .map((i) => ({ name: i.name, host: i.host, pid: i.pid, version: i.version, since: i.startedOn })),
    connections,
    queues: queues.map((q) => ({
      name: q.name,
      queued: q.queuedCount,
      active: q.activeCount,
      failed: q.failedCount,
      deferred: q.deferredCount,
    })),
    routers,
    openFaults,
  };
  return {
    text: [
      `migrations: ${json.migrations}`,
      `processes with the job engine (${json.processes.length}):`,
      ...json.processes.map((p) => `  ${p.name ?? "-"} ${p.host} pid ${p.pid} (pg-boss ${p.version})`),
      ...(connections.length > 0
        ? ["database connections by application:", ...connections.map((c) => `  ${c.application_name}: ${c.n}`)]
        : []),
      "queues (queued / active / failed / deferred):",
      ...json.queues.map((q) => `  ${q.name}: ${q.queued} / ${q.active} / ${q.failed} / ${q.deferred}`),
      `routers connected: ${json.routers.connected} of ${json.routers.total} (heartbeat within ${2 * heartbeatIntervalMs} ms)`,
      `open faults: ${json.openFaults}`,
    ],
    json,
  };
};

/**
 * `jobs failed`: jobs that failed for good (state `failed`) and the contents of dead-letter
 * queues (`*.dead`), newest first, with their last error.
 */
export const failedJobsCommand = async ({ db }: AdminContext, queue?: string): Promise<AdminOutput> => {
  const jobs = await listFailedJobs(db, queue);
  return {
    text:
      jobs.length === 0
        ? ["no failed jobs"]
        : jobs.map((j) => `${j.id}  ${j.queue}  ${JSON.stringify(j.data)}  ${j.error ?? ""}`),
    json: jobs,
  };
};

/**
 * `jobs retry <id>`: a dead-lettered router job is queued again on its router (the copy is
 * deleted); any other failed job is retried by pg-boss in place.
 */
export const retryJobCommand = async ({ db }: AdminContext, id: string): Promise<AdminOutput> => {
  if (!isUuid(id)) throw new AdminError(`"${id}" is not a job id (a UUID from \`jobs failed\`)`);
  const row = await findJob(db, id);
  if (!row) throw new AdminError(`no job ${id}`);
  return withEngine(db, async (engine) => {
    if (row.queue === ROUTER_JOBS_DEAD_LETTER) {
      const data = row.data as RouterJobData;
      const newId = await queueRouterJob(engine, data);
      await engine.boss.deleteJob(ROUTER_JOBS_DEAD_LETTER, id);
      return { text: [`queued again as ${newId} on router ${data.router_id}`], json: { retried: id, newId } };
    }
    if (row.state !== "failed") throw new AdminError(`job ${id} is ${row.state}, not failed`);
    await engine.boss.retry(row.queue, id);
    return { text: [`job ${id} of ${row.queue} retried`], json: { retried: id } };
  });
};

/**
 * `org create --name N [--owner-email E]`: an organization with its default team; with an owner,
 * the owner's user too (as on a first login), so the first person can sign in with a token of the
 * identity provider without dev-login.
 */
export const createOrganizationCommand = async (
  { db }: AdminContext,
  name: string,
  ownerEmail?: string,
): Promise<AdminOutput> => {
  const trimmed = name.trim();
  if (trimmed.length === 0 || trimmed.length > 200) throw new AdminError("--name must be 1-200 characters");
  if (breaksTextRule(trimmed)) throw new AdminError("--name must not contain control characters");
  const identity = new IdentityWorkflow(db);
  if (ownerEmail !== undefined) {
    if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(ownerEmail)) throw new AdminError("--owner-email must be an email address");
    const login = await identity.loginByEmail(ownerEmail, trimmed);
    if (!login.created) {
      throw new AdminError(`${ownerEmail} already exists (organization ${login.organizationId}); nothing was created`);
    }
    return {
      text: [
        `organization ${login.organizationId} (team ${login.teamId}) owned by ${ownerEmail} (user ${login.userId})`,
      ],
      json: login,
    };
  }
  const created = await identity.createOrganization(trimmed);
  return { text: [`organization ${created.organizationId} (team ${created.teamId})`], json: created };
};

/**
 * `--scopes a,b,...`: tenant scopes and the platform scopes (`tunnel:assign`) that only this CLI
 * can put on a key (docs/api.md "Authentication"). Absent: every tenant scope.
 */
export const parseKeyScopes = (text: string | undefined): string[] => {
  if (text === undefined) return [...ALL_SCOPES];
  const known: readonly string[] = [...ALL_SCOPES, ...PLATFORM_SCOPES];
  const scopes = [...new Set(text.split(",").map((s) => s.trim()))];
  const unknown = scopes.filter((s) => !known.includes(s));
  if (scopes.length === 0 || unknown.length > 0) {
    throw new AdminError(`--scopes takes a comma-separated list of ${known.join(", ")}`);
  }
  return scopes;
};

/**
 * An API key of an organization, for a production install without dev-login (the first key) and
 * for the deployment's operators (`--scopes tunnel:assign,...`): no expiry, created by
 * "admin-cli" and audited as a system action. The key is printed once.
 */
export const createApiKeyCommand = async (
  { db }: AdminContext,
  organizationId: string,
  name = "bootstrap",
  scopes: readonly string[] = ALL_SCOPES,
): Promise<AdminOutput> => {
  if (!isUuid(organizationId)) throw new AdminError("--org must be an organization id (a UUID)");
  if (name.length === 0 || name.length > 100 || breaksTextRule(name)) {
    throw new AdminError("--name must be 1-100 characters without control characters");
  }
  if (!(await new IdentityWorkflow(db).organizationExists(organizationId))) {
    throw new AdminError(`no organization ${organizationId}`);
  }
  const { key, prefix, keyHash } = mintApiKey();
  const record = await storeApiKey(
    db,
    {
      organizationId,
      createdBy: "admin-cli",
      name,
      prefix,
      keyHash,
      scopes: [...scopes],
      createdAt: new Date(),
      expiresAt: null,
    },
    SYSTEM_ORIGIN,
  );
  if (!record) {
    throw new AdminError(
      `organization ${organizationId} already holds ${API_KEYS_PER_ORGANIZATION} live API keys; revoke one first`,
    );
  }
  return {
    text: [`api key ${record.id} (${prefix}...) for organization ${organizationId}:`, key],
    json: { id: record.id, organizationId, name, prefix, scopes: record.scopes, key },
  };
};

/** A usage error: printed as one line, exit code 2, nothing changed. */
export class AdminError extends Error {}

/**
 * `tunnel clear-pin <address>` (docs/api.md "Routers and heartbeats"): forgets the SSH host key
 * last pinned at a tunnel address, after an operator checked the device there. Until then the
 * agent refuses a new router at an address whose last pinned key belonged to a removed router of
 * another organization. The address's quarantine is not changed.
 */
export const clearTunnelPinCommand = async ({ db }: AdminContext, tunnelIp: string): Promise<AdminOutput> => {
  if (!/^\d{1,3}(\.\d{1,3}){3}$/.test(tunnelIp)) throw new AdminError(`"${tunnelIp}" is not an IPv4 tunnel address`);
  const addresses = new TunnelAddressesRepository(db);
  const before = await addresses.find(tunnelIp);
  if (!before?.fingerprint) throw new AdminError(`no host key is pinned at ${tunnelIp}; nothing was changed`);
  await addresses.clearPin(tunnelIp);
  return {
    text: [
      `cleared the host key ${before.fingerprint} pinned at ${tunnelIp} (last router ${before.routerId} of organization ${before.organizationId})`,
    ],
    json: { tunnelIp, cleared: before.fingerprint, routerId: before.routerId, organizationId: before.organizationId },
  };
};
