import type { FaultRecord, RouterListItem, RouterListPosition, RouterRecord } from "@fleet/db";
import {
  formatDateTime,
  formatDuration,
  formatIsoUtc,
  formatTimeAgo,
  breaksTextRule,
  isUuid,
  ROUTER_LIMITS,
  type HourlyDowntime,
  type TFault,
  type TMetric,
  type TRouter,
  type TRouterMetadata,
  toFaultResponse,
  tunnelStatus,
  ZRouterMetadata,
} from "@fleet/shared";

/**
 * Record -> docs/api.md "Router". An online router's uptime runs on from its last report; an offline
 * router shows the uptime it last reported. Timestamps are UTC.
 */
export const toRouterResponse = (router: RouterListItem, now: Date): TRouter => {
  let uptime: string | null = null;
  if (router.uptimeSeconds !== null) {
    const sinceReport =
      router.hasPulse && router.lastSeenAt ? Math.max(0, (now.getTime() - router.lastSeenAt.getTime()) / 1000) : 0;
    uptime = formatDuration(router.uptimeSeconds + sinceReport);
  }
  return {
    id: router.id,
    name: router.name,
    identity: router.identity,
    serial_number: router.serialNumber,
    software_version: router.softwareVersion,
    software_id: router.softwareId,
    has_pulse: router.hasPulse,
    uptime,
    last_seen: formatTimeAgo(router.lastSeenAt, now),
    last_seen_from: router.lastSeenFrom,
    hardwareboard: router.hardwareboard,
    model: router.model,
    board_name: router.boardName,
    last_seen_at: router.lastSeenAt ? formatDateTime(router.lastSeenAt) : null,
    created_at: formatDateTime(router.createdAt),
    tags: router.tags,
    cpu_load: router.cpuLoad ?? null,
    memory_used_percent: router.memoryUsedPercent ?? null,
    temperature: router.temperature ?? null,
  };
};

const KNOWN_KEYS = new Set(Object.keys(ZRouterMetadata.shape));

/**
 * Record -> docs/api.md "Router Metadata": what the router reported (free-form keys only; known keys are
 * typed and come from the router's columns or the user), overlaid by the user's keys, overlaid by
 * the router's facts.
 */
export const toMetadataResponse = (
  router: RouterRecord,
  product: { slug: string; banner: string | null; thumbnail: string | null } | null = null,
  /** Set in TUNNEL_MODE=wireguard: the time `tunnel_status` is judged at. */
  tunnelNow?: Date,
): TRouterMetadata => {
  const reported = Object.fromEntries(Object.entries(router.reportedMetadata).filter(([key]) => !KNOWN_KEYS.has(key)));
  // Catalogue values are defaults: images a user set on the router win.
  const catalogue: Record<string, string> = {};
  if (product) {
    catalogue.slug = product.slug;
    if (product.banner) catalogue.banner_img = product.banner;
    if (product.thumbnail) catalogue.thumbnail_img = product.thumbnail;
  }
  return {
    ...reported,
    ...catalogue,
    ...router.userMetadata,
    name: router.name,
    model: router.model,
    boardname: router.boardName,
    hardwareboard: router.hardwareboard,
    ...(router.lastSeenFrom ? { last_seen_from: router.lastSeenFrom } : {}),
    ...(router.tunnelIp ? { tunnel_ip: router.tunnelIp } : {}),
    // TUNNEL_MODE=wireguard only: in external mode the system knows nothing of the tunnel's state.
    ...(tunnelNow
      ? {
          tunnel_status: tunnelStatus(
            router.tunnelBound === true,
            router.tunnelHandshakeAt ?? null,
            router.tunnelAnsweredAt ?? null,
            tunnelNow,
          ),
          tunnel_handshake_at: router.tunnelHandshakeAt ? formatIsoUtc(router.tunnelHandshakeAt) : null,
        }
      : {}),
  };
};

export const toMetricResponse = (hour: HourlyDowntime): TMetric => ({
  date: formatIsoUtc(hour.hour),
  minutes_down: hour.minutesDown,
  percentage_down: hour.percentageDown,
});

export const toFault = (fault: FaultRecord): TFault => toFaultResponse(fault);

/** Where a list page ended, opaque to clients: the sort, its key and the id (docs/api.md "Listing a fleet"). */
export const encodeListCursor = (position: RouterListPosition): string =>
  Buffer.from(
    JSON.stringify(
      position.sort === "name"
        ? ["name", position.name, position.id]
        : position.sort === "last_seen"
          ? ["last_seen", position.lastSeenMicros, position.id]
          : [position.sort, position.value, position.id],
    ),
  ).toString("base64url");

/** The position a cursor names; null when it is not one {@link encodeListCursor} made. */
export const decodeListCursor = (cursor: string): RouterListPosition | null => {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  } catch {
    return null;
  }
  if (!Array.isArray(value) || value.length !== 3) return null;
  const [sort, key, id] = value as unknown[];
  if (typeof id !== "string" || !isUuid(id)) return null;
  // A name as enrollment stores it (nothing a text column refuses, such as NUL, reaches the query).
  if (sort === "name" && typeof key === "string" && key.length <= ROUTER_LIMITS.name && !breaksTextRule(key))
    return { sort, name: key, id };
  if (sort === "last_seen" && (key === null || (typeof key === "string" && /^\d{1,19}$/.test(key))))
    return { sort, lastSeenMicros: key, id };
  // A health measure as float8 text (docs/api.md "Health"); parsed back by PostgreSQL as a bound float8.
  if ((sort === "cpu" || sort === "memory" || sort === "temperature") && (key === null || isFloat8Text(key)))
    return { sort, value: key, id };
  return null;
};

/**
 * Text PostgreSQL reads as a float8 without an error: a plain decimal that neither overflows nor
 * underflows to zero ("1e-400" is out of range for PostgreSQL, 0 for JavaScript).
 */
const isFloat8Text = (key: unknown): key is string => {
  if (typeof key !== "string" || key.length > 32 || !/^-?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(key)) return false;
  const value = Number(key);
  if (!Number.isFinite(value)) return false;
  const mantissa = key.split(/e/i)[0] ?? "";
  return value !== 0 || !/[1-9]/.test(mantissa);
};
