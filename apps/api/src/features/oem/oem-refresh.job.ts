import { type Database, type JobEngine, OemRepository, registerScheduledTask } from "@fleet/db";
import { type Clock, ZOemCatalog } from "@fleet/shared";
import type { Logger } from "pino";

export interface OemRefreshDeps {
  /** `OEM_CATALOG_URL`: serves `{ "version"?: "...", "products": [OemProduct, ...] }`. */
  url: URL;
  /** The catalogue is swapped in one transaction (docs/api.md "OEM Information"). */
  db: Pick<Database, "transaction">;
  logger: Logger;
  clock: Clock;
  /** Whole request, headers and body. */
  timeoutMs?: number;
  /** Largest body accepted. */
  maxBytes?: number;
  fetch?: typeof fetch;
}

export type OemRefreshResult = { ok: true; count: number } | { ok: false; reason: string };

export const OEM_REFRESH_TIMEOUT_MS = 30_000;
/** Far above a real catalogue (the shipped one is ~250 KB); guards memory against a bad server. */
export const OEM_REFRESH_MAX_BYTES = 10 * 1024 * 1024;

/** The URL as it may be logged and stored: no credentials, no query (it may carry a token). */
export const safeSourceUrl = (url: URL): string => `${url.origin}${url.pathname}`;

class RefreshFailure extends Error {}

/**
 * Fetches the vendor catalogue and replaces the stored one. Any failure (network, timeout, HTTP
 * status, oversized or non-JSON body, schema mismatch, empty list, database) keeps the last good
 * data and logs one warning; it never throws, so a schedule can call it blindly.
 */
export const refreshOemCatalog = async (deps: OemRefreshDeps): Promise<OemRefreshResult> => {
  const source = safeSourceUrl(deps.url);
  try {
    const body = await download(deps);
    let payload: unknown;
    try {
      payload = JSON.parse(body);
    } catch {
      throw new RefreshFailure("the response is not valid JSON");
    }
    const parsed = ZOemCatalog.safeParse(payload);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const where = issue?.path.length ? ` at ${issue.path.join(".")}` : "";
      throw new RefreshFailure(
        `the catalogue does not match the product schema${where}: ${issue?.message ?? "invalid"}`,
      );
    }
    const catalog = parsed.data;
    const count = await deps.db.transaction((query) =>
      new OemRepository(query).replaceAll(catalog, source, deps.clock.now()),
    );
    deps.logger.info({ source, count }, "OEM catalogue refreshed");
    return { ok: true, count };
  } catch (error) {
    const reason = error instanceof RefreshFailure ? error.message : `unexpected error: ${describe(error)}`;
    deps.logger.warn({ source, reason }, "OEM catalogue refresh failed; keeping the last good data");
    return { ok: false, reason };
  }
};

const download = async (deps: OemRefreshDeps): Promise<string> => {
  const maxBytes = deps.maxBytes ?? OEM_REFRESH_MAX_BYTES;
  const signal = AbortSignal.timeout(deps.timeoutMs ?? OEM_REFRESH_TIMEOUT_MS);
  let response: Response;
  try {
    response = await (deps.fetch ?? fetch)(deps.url, {
      headers: { accept: "application/json" },
      redirect: "follow",
      signal,
    });
  } catch (error) {
    throw new RefreshFailure(signal.aborted ? "the request timed out" : `the request failed: ${describe(error)}`);
  }
  if (!response.ok) {
    await response.body?.cancel().catch(() => {});
    throw new RefreshFailure(`the server answered HTTP ${response.status}`);
  }
  const declared = Number(response.headers.get("content-length") ?? Number.NaN);
  if (declared > maxBytes) {
    await response.body?.cancel().catch(() => {});
    throw new RefreshFailure(`the response is larger than ${maxBytes} bytes`);
  }
  const reader = response.body?.getReader();
  if (!reader) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > maxBytes) {
        await reader.cancel().catch(() => {});
        throw new RefreshFailure(`the response is larger than ${maxBytes} bytes`);
      }
      chunks.push(value);
    }
  } catch (error) {
    if (error instanceof RefreshFailure) throw error;
    throw new RefreshFailure(
      signal.aborted ? "the request timed out" : `reading the response failed: ${describe(error)}`,
    );
  }
  return Buffer.concat(chunks).toString("utf8");
};

const describe = (error: unknown): string => {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : "";
  return `${error.message}${cause}`;
};

export interface OemRefreshSchedule {
  /** Runs one refresh now, as the schedule would. */
  runNow(): Promise<OemRefreshResult>;
  /** Stops this process's worker; the cluster-wide schedule stays for the other API processes. */
  stop(): Promise<void>;
}

/** The job engine queue of the refresh (docs/operations.md "Metrics and probes"). */
export const OEM_REFRESH_QUEUE = "oem.refresh";

/**
 * `OEM_REFRESH_CRON` drives `refreshOemCatalog` through the job engine's cluster-wide schedule:
 * however many API processes run, one refresh per slot, by whichever takes the job. The cron is read
 * in the server's time zone, as before. Runs never overlap (one job of the queue at a time here,
 * and slots far apart).
 */
export const scheduleOemRefresh = async (
  engine: JobEngine,
  deps: OemRefreshDeps & { cron: string },
): Promise<OemRefreshSchedule> => {
  const run = () => refreshOemCatalog(deps);
  // A failed refresh keeps the last good data and waits for the next slot: no retries.
  const task = await registerScheduledTask(engine, { queue: OEM_REFRESH_QUEUE, cron: deps.cron, run });
  return { runNow: run, stop: () => task.stop() };
};

/** Without OEM_CATALOG_URL nothing refreshes: drop a schedule an earlier configuration left. */
export const unscheduleOemRefresh = async (engine: JobEngine): Promise<void> => {
  if (await engine.boss.getQueue(OEM_REFRESH_QUEUE)) await engine.boss.unschedule(OEM_REFRESH_QUEUE);
};
